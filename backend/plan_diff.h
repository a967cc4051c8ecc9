#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backend/gpulet_spec.h"
#include "backend/gpulet_table.h"

namespace tessera {

// What applying a plan does to one backend's proxies.
struct PlanDiff {
  // Gpulets whose running proxy serves on.
  std::set<std::string> keep;
  // Of `keep`, those that serve fewer models than their proxy loaded (a
  // model unloaded; same share, device and cores): the proxy drops these
  // models instead of being replaced, so its other models serve on without
  // a shadow process that loads them again. By gpulet id.
  std::map<std::string, std::vector<std::string>> drop;
  // Gpulets that need a new proxy (new, or changed share, models, device
  // or cores, or whose proxy died).
  std::vector<std::string> start;
  // Devices whose memory cannot hold the old proxies and the new ones at
  // once: their old proxies (except kept ones) are stopped before the new
  // ones start.
  std::vector<std::string> stop_first_devices;
  // Of `start`, the gpulets on a stop-first device.
  int stop_then_start = 0;
};

// The pure diff between the gpulets running now and the plan's `wanted`
// ones (by id). `memory_capacity_bytes` is each device's memory (absent or
// <= 0: unlimited).
PlanDiff DiffPlan(const std::vector<ResidentGpulet>& residents,
                  const std::map<std::string, GpuletSpec>& wanted,
                  const std::map<std::string, int64_t>& memory_capacity_bytes);

// INVALID_ARGUMENT when `wanted` puts more than `max_per_device` gpulets
// (proxy processes) on one device.
absl::Status CheckGpuletsPerDevice(
    const std::map<std::string, GpuletSpec>& wanted, int max_per_device);

}  // namespace tessera
