#include "sim/inss_v100_setup.h"

namespace tessera {

InssCheckpointInfo V100InssInfo(const std::vector<std::string>& models,
                                int gpus, double unit_percent) {
  InssCheckpointInfo info;
  info.set_profile_key("v100");
  info.set_gpus(gpus);
  for (const std::string& m : models) info.add_models(m);
  info.set_share_unit_percent(unit_percent);
  info.set_share_units(static_cast<int>(100 / unit_percent + 0.5));
  info.set_state_size(6 * static_cast<int>(models.size()) + gpus);
  info.set_hidden1_size(512);
  info.set_hidden2_size(256);
  return info;
}

absl::StatusOr<InssCluster> V100InssCluster(const V100Setup& setup,
                                            const InssCheckpointInfo& info,
                                            ClusterSnapshot* storage) {
  std::vector<WorkloadModel> models;
  for (const std::string& m : info.models()) models.push_back({m, 1});
  *storage = MakeV100Snapshot(setup, info.gpus(), models, 5);
  PolicyOptions options;
  options.interference = setup.linear;
  return InssCluster::FromSnapshot(*storage, options, info);
}

}  // namespace tessera
