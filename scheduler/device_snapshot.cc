#include "scheduler/device_snapshot.h"

#include <utility>

namespace tessera {

std::string ProfileKey(DeviceKind kind) {
  switch (kind) {
    case DEVICE_KIND_CPU:
      return "cpu";
    case DEVICE_KIND_CUDA:
      return "cuda";
    case DEVICE_KIND_EMULATED:
      return "emulated";
    default:
      return "unknown";
  }
}

DeviceSnapshot MakeDeviceSnapshot(std::string backend_id, std::string device_id,
                                  DeviceKind kind, int num_cores,
                                  int64_t memory_bytes,
                                  std::string profile_key) {
  DeviceSnapshot device{
      std::move(backend_id),
      std::move(device_id),
      kind,
      num_cores,
      memory_bytes,
      profile_key.empty() ? ProfileKey(kind) : std::move(profile_key)};
  if (kind == DEVICE_KIND_CPU && num_cores > 0) {
    for (int k = 1; k <= num_cores; ++k) {
      device.allowed_shares.push_back(100.0 * k / num_cores);
    }
  }
  return device;
}

}  // namespace tessera
