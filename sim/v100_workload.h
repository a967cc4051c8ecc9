#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/igniter_v100_data.h"
#include "perfmodel/interference_model.h"
#include "scheduler/profile_fits.h"
#include "scheduler/scheduling_policy.h"
#include "sim/ground_truth.h"
#include "sim/workload_suite.h"

namespace tessera {

// Everything the experiments need from the V100 measurements: profiles,
// ground truth for the simulator and fitted interference models.
struct V100Setup {
  IgniterV100Data data;
  std::unique_ptr<GroundTruth> truth;
  std::shared_ptr<const InterferenceModel> linear;    // gpulet's form
  std::shared_ptr<const InterferenceModel> pairwise;  // Tessera's form
};

absl::StatusOr<std::unique_ptr<V100Setup>> LoadV100Setup(
    const std::string& profile_jsonl, Share100Rule rule, double noise_sigma);

// The interference model interference-aware policies plan with, by name:
// "linear" (gpulet's form), "pairwise" (Tessera's) or "none";
// INVALID_ARGUMENT for another name.
absl::StatusOr<std::shared_ptr<const InterferenceModel>> V100Interference(
    const V100Setup& setup, const std::string& name);

// A model instance of a workload: `name` may be a replica ("alexnet/2") of
// a measured model ("alexnet").
struct WorkloadModel {
  std::string name;
  double rate_rps = 0;
};

// A cluster of `gpus` V100s (profile key "v100") serving `models`, each
// with SLO = slo_factor x its batch-1 full-GPU latency and max batch 32.
ClusterSnapshot MakeV100Snapshot(const V100Setup& setup, int gpus,
                                 const std::vector<WorkloadModel>& models,
                                 double slo_factor);

// The same for every model of `workload`, each at `base_rate_rps`.
ClusterSnapshot MakeV100Snapshot(const V100Setup& setup, int gpus,
                                 const Workload& workload, double base_rate_rps,
                                 double slo_factor);

// The latency-model fits of every measured model's profile as
// MakeV100Snapshot configures it, under `rules` (PolicyOptions.fits).
std::shared_ptr<const ProfileFits> MakeV100Fits(const V100Setup& setup,
                                                const PlanningRules& rules);

// Model configs (SLO, max batch) of a snapshot, for the simulator.
std::map<std::string, ModelConfig> Configs(const ClusterSnapshot& snapshot);

}  // namespace tessera
