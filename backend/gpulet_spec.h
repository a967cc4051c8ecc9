#pragma once

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
};

}  // namespace tessera
