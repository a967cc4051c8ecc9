#include "frontend/cluster_snapshot_builder.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/text_proto.h"

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
                                     const std::string& profile_dir,
                                     const Plan& current_plan, absl::Time now,
                                     double time_scale) {
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
    if (!profile_dir.empty()) {
      for (DeviceKind kind :
           {DEVICE_KIND_CPU, DEVICE_KIND_EMULATED, DEVICE_KIND_CUDA}) {
        const std::string key = ProfileKey(kind);
        const std::string path =
            absl::StrCat(profile_dir, "/", key, "/", name, ".pbtxt");
        ModelProfile profile;
        if (std::filesystem::exists(path) &&
            ReadTextProto(path, &profile).ok()) {
          if (kind == DEVICE_KIND_EMULATED && time_scale != 1) {
            for (LatencyPoint& p : *profile.mutable_latency()) {
              p.set_latency_ms(p.latency_ms() * time_scale);
              p.set_latency_p99_ms(p.latency_p99_ms() * time_scale);
            }
          }
          m.profiles[key] = profile;
        }
      }
    }
    snapshot.models.push_back(std::move(m));
  }
  return snapshot;
}

}  // namespace tessera
