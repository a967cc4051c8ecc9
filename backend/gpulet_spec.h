#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "plan.pb.h"

namespace tessera {

// One gpulet this backend is asked to serve, resolved against the node:
// its plan, its device, its cores (cpu devices) and the device memory its
// models need (emulated devices with a memory size; 0 elsewhere).
struct GpuletSpec {
  GpuletPlan plan;
  std::string device_id;
  std::vector<int> cores;
  int64_t memory_bytes = 0;

  const std::string& id() const { return plan.gpulet_id(); }
  // The models its proxy serves, sorted, each once.
  std::vector<std::string> ModelNames() const {
    std::vector<std::string> names;
    for (const ModelAssignment& a : plan.models()) names.push_back(a.model());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }
};

}  // namespace tessera
