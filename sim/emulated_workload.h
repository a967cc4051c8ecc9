#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/model_repository.h"
#include "perfmodel/interference_model.h"
#include "scheduler/scheduling_policy.h"
#include "sim/ground_truth.h"
#include "sim/v100_workload.h"

namespace tessera {

// The emulated GPU model set the project ships (configs/emulated/models,
// profiles/emulated): what the simulator needs to predict the live
// emulated cluster. Times are the emulated GPU's (time scale 1).
// The same for the shipped models' CPU profiles (models/, profiles/cpu,
// device kind "cpu"): the measured L(b, p) and the fitted interference.
struct EmulatedSetup {
  std::string profile_key = "emulated";  // "emulated" or "cpu"
  std::unique_ptr<ModelRepository> repository;
  std::map<std::string, ModelProfile> profiles;
  // The linear model of profiles/emulated/interference.pbtxt, which the
  // emulated backend applies (NoInterference when the file is absent).
  std::shared_ptr<const InterferenceModel> interference;
  std::unique_ptr<GroundTruth> truth;
};

absl::StatusOr<std::unique_ptr<EmulatedSetup>> LoadEmulatedSetup(
    const std::string& model_repository, const std::string& profile_dir,
    double noise_sigma, const std::string& profile_key = "emulated");

// `gpus` emulated GPUs (profile key "emulated", memory as the backend's
// default) serving `models` with their configured SLOs.
ClusterSnapshot MakeEmulatedSnapshot(const EmulatedSetup& setup, int gpus,
                                     const std::vector<WorkloadModel>& models);

// `devices` CPU devices of `cores` cores each (partitions in multiples of
// 100 / cores, as the backend reports them) serving `models` with their
// configured SLOs; `setup` loaded with profile key "cpu".
ClusterSnapshot MakeCpuSnapshot(const EmulatedSetup& setup, int devices,
                                int cores,
                                const std::vector<WorkloadModel>& models);

}  // namespace tessera
