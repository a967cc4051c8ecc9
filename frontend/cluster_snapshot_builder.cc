#include "frontend/cluster_snapshot_builder.h"

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

ClusterSnapshot BuildClusterSnapshot(const std::vector<NodeInfo>& nodes,
                                     const ModelRepository& repository,
                                     const ProfileStore& profiles,
                                     const Plan& current_plan, absl::Time now) {
  ClusterSnapshot snapshot;
  snapshot.now = now;
  snapshot.current_plan = current_plan;
  for (const NodeInfo& node : nodes) {
    for (const DeviceInfo& d : node.devices()) {
      DeviceSnapshot device{node.backend_id(), d.device_id(),
                            d.kind(),          d.num_cores(),
                            d.memory_bytes(),  ProfileKey(d.kind())};
      // A cpu device partitions whole cores: shares are multiples of 100/C.
      if (d.kind() == DEVICE_KIND_CPU && d.num_cores() > 0) {
        for (int k = 1; k <= d.num_cores(); ++k) {
          device.allowed_shares.push_back(100.0 * k / d.num_cores());
        }
      }
      snapshot.devices.push_back(std::move(device));
    }
  }
  for (const std::string& name : repository.ModelNames()) {
    ModelSnapshot m;
    m.config = repository.Find(name)->config;
    m.profiles = profiles.ProfilesOf(name);
    snapshot.models.push_back(std::move(m));
  }
  return snapshot;
}

}  // namespace tessera
