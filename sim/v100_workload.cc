#include "sim/v100_workload.h"

#include "absl/strings/str_cat.h"
#include "common/model_instance.h"
#include "common/status_macros.h"
#include "scheduler/device_snapshot.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<V100Setup>> LoadV100Setup(
    const std::string& profile_jsonl, Share100Rule rule, double noise_sigma) {
  auto setup = std::make_unique<V100Setup>();
  ASSIGN_OR_RETURN(auto data, LoadIgniterV100(profile_jsonl, rule));
  setup->data = std::move(data);
  ASSIGN_OR_RETURN(auto models, BuildLatencyModels(setup->data.profiles));
  // Interference models are fitted on samples that point into `models`;
  // the fitted models keep only coefficients and names.
  const auto samples = ToSamples(setup->data.colocation, models);
  ASSIGN_OR_RETURN(auto linear, LinearInterference::Fit(samples));
  setup->linear = std::make_shared<LinearInterference>(linear);
  ASSIGN_OR_RETURN(auto pairwise, PairwiseInterference::Fit(samples));
  setup->pairwise = std::make_shared<PairwiseInterference>(pairwise);
  setup->truth = std::make_unique<GroundTruth>(
      std::move(models), setup->data.colocation, noise_sigma);
  return setup;
}

absl::StatusOr<std::shared_ptr<const InterferenceModel>> V100Interference(
    const V100Setup& setup, const std::string& name) {
  if (name == "linear") return setup.linear;
  if (name == "pairwise") return setup.pairwise;
  if (name == "none") {
    return std::shared_ptr<const InterferenceModel>(
        std::make_shared<NoInterference>());
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the interference model must be linear, pairwise or none, not '", name,
      "'"));
}

ClusterSnapshot MakeV100Snapshot(const V100Setup& setup, int gpus,
                                 const std::vector<WorkloadModel>& models,
                                 double slo_factor) {
  ClusterSnapshot s;
  for (int i = 0; i < gpus; ++i) {
    s.devices.push_back(MakeDeviceSnapshot("sim", "gpu" + std::to_string(i),
                                           DEVICE_KIND_EMULATED, 0,
                                           int64_t{16} << 30, "v100"));
  }
  for (const WorkloadModel& w : models) {
    const std::string base = BaseModelName(w.name);
    const LatencyModel* lm = setup.truth->model(base);
    if (lm == nullptr) continue;
    ModelSnapshot m;
    m.config.set_name(w.name);
    m.config.set_platform("torchscript");
    m.config.set_max_batch_size(lm->max_batch());
    m.config.set_slo_ms(slo_factor * lm->LatencyMs(1, 100));
    m.rate_rps = w.rate_rps;
    m.profiles["v100"] = setup.data.profiles.at(base);
    s.models.push_back(std::move(m));
  }
  return s;
}

ClusterSnapshot MakeV100Snapshot(const V100Setup& setup, int gpus,
                                 const Workload& workload, double base_rate_rps,
                                 double slo_factor) {
  std::vector<WorkloadModel> models;
  for (const std::string& m : workload.models) {
    models.push_back({m, base_rate_rps});
  }
  return MakeV100Snapshot(setup, gpus, models, slo_factor);
}

std::shared_ptr<const ProfileFits> MakeV100Fits(const V100Setup& setup,
                                                const PlanningRules& rules) {
  std::vector<WorkloadModel> models;
  for (const auto& [name, profile] : setup.data.profiles) {
    models.push_back({name, 0});
  }
  return std::make_shared<const ProfileFits>(
      ProfileFits::Build(MakeV100Snapshot(setup, 0, models, 1).models, rules));
}

std::map<std::string, ModelConfig> Configs(const ClusterSnapshot& snapshot) {
  std::map<std::string, ModelConfig> configs;
  for (const ModelSnapshot& m : snapshot.models) {
    configs[m.config.name()] = m.config;
  }
  return configs;
}

}  // namespace tessera
