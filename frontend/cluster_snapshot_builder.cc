#include "frontend/cluster_snapshot_builder.h"

#include "scheduler/device_snapshot.h"

namespace tessera {

ClusterSnapshot BuildClusterSnapshot(const std::vector<NodeInfo>& nodes,
                                     const ModelRepository& repository,
                                     const ProfileStore& profiles,
                                     const Plan& current_plan, absl::Time now) {
  ClusterSnapshot snapshot;
  snapshot.now = now;
  snapshot.current_plan = current_plan;
  for (const NodeInfo& node : nodes) {
    for (const DeviceInfo& d : node.devices()) {
      snapshot.devices.push_back(
          MakeDeviceSnapshot(node.backend_id(), d.device_id(), d.kind(),
                             d.num_cores(), d.memory_bytes()));
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
