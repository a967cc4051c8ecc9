#pragma once

#include <cstdint>
#include <string>

#include "config.pb.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// The profile key (and profiles/ subdirectory) of a device kind: "cpu",
// "emulated" or "cuda".
std::string ProfileKey(DeviceKind kind);

// A device as every snapshot builder (the frontend's, the simulator's)
// makes it: its profiles under `profile_key`, by default its kind's
// ProfileKey; a cpu device with cores partitions whole cores, so its
// shares are the multiples of 100/cores.
DeviceSnapshot MakeDeviceSnapshot(std::string backend_id, std::string device_id,
                                  DeviceKind kind, int num_cores,
                                  int64_t memory_bytes,
                                  std::string profile_key = "");

}  // namespace tessera
