#include "sim/emulated_workload.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "scheduler/device_snapshot.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<EmulatedSetup>> LoadEmulatedSetup(
    const std::string& model_repository, const std::string& profile_dir,
    double noise_sigma, const std::string& profile_key) {
  auto setup = std::make_unique<EmulatedSetup>();
  setup->profile_key = profile_key;
  ASSIGN_OR_RETURN(auto repo, ModelRepository::Load(model_repository));
  setup->repository = std::move(repo);
  std::map<std::string, LatencyModel> models;
  const std::string dir = profile_dir + "/" + profile_key + "/";
  for (const std::string& name : setup->repository->ModelNames()) {
    ModelProfile profile;
    RETURN_IF_ERROR(ReadTextProto(dir + name + ".pbtxt", &profile));
    ASSIGN_OR_RETURN(auto model, LatencyModel::FromProfile(profile));
    models.emplace(name, std::move(model));
    setup->profiles[name] = std::move(profile);
  }
  setup->interference = std::make_shared<NoInterference>();
  if (std::filesystem::exists(dir + "interference.pbtxt")) {
    InterferenceProfile ip;
    RETURN_IF_ERROR(ReadTextProto(dir + "interference.pbtxt", &ip));
    if (ip.linear_coefficients_size() != 5) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, "interference.pbtxt: needs 5 coefficients"));
    }
    setup->interference =
        std::make_shared<LinearInterference>(std::vector<double>(
            ip.linear_coefficients().begin(), ip.linear_coefficients().end()));
  }
  setup->truth = std::make_unique<GroundTruth>(
      std::move(models), setup->interference, noise_sigma);
  return setup;
}

namespace {

// `models` with their configs and the setup's profiles (under its profile
// key); models the setup lacks are left out.
void AddModels(const EmulatedSetup& setup,
               const std::vector<WorkloadModel>& models,
               ClusterSnapshot* snapshot) {
  for (const WorkloadModel& w : models) {
    const ModelRepository::Entry* entry = setup.repository->Find(w.name);
    auto profile = setup.profiles.find(w.name);
    if (entry == nullptr || profile == setup.profiles.end()) continue;
    ModelSnapshot m;
    m.config = entry->config;
    m.rate_rps = w.rate_rps;
    m.profiles[setup.profile_key] = profile->second;
    snapshot->models.push_back(std::move(m));
  }
}

}  // namespace

ClusterSnapshot MakeEmulatedSnapshot(const EmulatedSetup& setup, int gpus,
                                     const std::vector<WorkloadModel>& models) {
  ClusterSnapshot snapshot;
  for (int i = 0; i < gpus; ++i) {
    snapshot.devices.push_back(MakeDeviceSnapshot("sim", absl::StrCat("gpu", i),
                                                  DEVICE_KIND_EMULATED, 0,
                                                  int64_t{11264} << 20));
  }
  AddModels(setup, models, &snapshot);
  return snapshot;
}

ClusterSnapshot MakeCpuSnapshot(const EmulatedSetup& setup, int devices,
                                int cores,
                                const std::vector<WorkloadModel>& models) {
  ClusterSnapshot snapshot;
  for (int i = 0; i < devices; ++i) {
    snapshot.devices.push_back(MakeDeviceSnapshot("sim", absl::StrCat("cpu", i),
                                                  DEVICE_KIND_CPU, cores, 0));
  }
  AddModels(setup, models, &snapshot);
  return snapshot;
}

}  // namespace tessera
