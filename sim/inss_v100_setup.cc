#include "sim/inss_v100_setup.h"

#include "scheduler/inss_environment.h"

namespace tessera {

InssCheckpointInfo MakeInssInfo(const std::string& profile_key,
                                const std::vector<std::string>& models,
                                int max_models, int gpus, double unit_percent) {
  InssCheckpointInfo info;
  info.set_profile_key(profile_key);
  info.set_gpus(gpus);
  info.set_max_models(max_models);
  for (const std::string& m : models) info.add_models(m);
  info.set_share_unit_percent(unit_percent);
  info.set_share_units(static_cast<int>(100 / unit_percent + 0.5));
  info.set_state_size(InssEnvironment::StateSize(max_models, gpus));
  info.set_hidden1_size(512);
  info.set_hidden2_size(256);
  return info;
}

InssCheckpointInfo V100InssInfo(const std::vector<std::string>& models,
                                int max_models, int gpus, double unit_percent) {
  return MakeInssInfo("v100", models, max_models, gpus, unit_percent);
}

absl::StatusOr<InssWorkloadSampler> V100InssSampler(
    const V100Setup& setup, const InssCheckpointInfo& info,
    InssWorkloadSamplerOptions options) {
  std::vector<WorkloadModel> models;
  for (const std::string& m : info.models()) models.push_back({m, 1});
  ClusterSnapshot pool = MakeV100Snapshot(setup, info.gpus(), models, 5);
  PolicyOptions policy;
  policy.interference = setup.linear;
  policy.fits = MakeV100Fits(setup, policy.rules);
  return InssWorkloadSampler::Create(std::move(pool), std::move(policy), info,
                                     std::move(options));
}

std::vector<std::string> V100InssHeldOut() {
  // The InSS paper's setting (all four and two more alexnet on 4 GPUs),
  // and 6 models on 4 GPUs, 9 on 4 and 9 on 8: mixes no training episode
  // draws.
  return {"alexnet*3+resnet50+ssd+vgg19@4", "alexnet*2+resnet50+ssd+vgg19*2@4",
          "alexnet*3+resnet50*2+ssd*2+vgg19*2@4",
          "alexnet*2+resnet50*3+ssd*2+vgg19*2@8"};
}

}  // namespace tessera
