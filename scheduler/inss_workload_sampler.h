#pragma once

#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "scheduler/inss_cluster.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// What the training episodes draw from: a device count and a multiset of
// the checkpoint's models, so that one actor covers a range of clusters
// and model sets (the workloads named in `held_out` are never drawn).
struct InssWorkloadSamplerOptions {
  int min_gpus = 1;
  int max_gpus = 8;
  int min_models = 1;
  int max_models = 9;
  // At most this many models per device (0: no limit): at K devices an
  // episode draws up to min(max_models, max_models_per_gpu x K) models.
  // A device split among more models than its SLO factor serves none of
  // them at any rate (each share stretches batch-1 latency about in
  // inverse proportion), so such episodes teach nothing but penalties.
  int max_models_per_gpu = 3;
  // Workload keys (InssWorkloadSampler::Key) kept out of training.
  std::vector<std::string> held_out;
};

class InssWorkloadSampler {
 public:
  // `pool` holds each of `info.models` once (config and profile) and at
  // least `options.max_gpus` devices; the ranges must lie within what
  // `info` covers (INVALID_ARGUMENT otherwise).
  static absl::StatusOr<InssWorkloadSampler> Create(
      ClusterSnapshot pool, PolicyOptions policy_options,
      InssCheckpointInfo info, InssWorkloadSamplerOptions options);

  // A workload drawn uniformly: K devices, then m models (within the
  // per-device limit), each model
  // uniformly among `info.models` ("alexnet/1", "alexnet/2", ... for
  // repeats), redrawn while it is held out. Its slots with traffic (rate
  // 1 req/s) are the workload's models.
  InssCluster Sample(std::mt19937_64& rng) const;
  // The cluster of one workload: `models` are base names (repeats allowed).
  absl::StatusOr<InssCluster> Make(const std::vector<std::string>& models,
                                   int gpus) const;

  // "alexnet*2+vgg19@4": the counts of each base model in name order and
  // the device count.
  static std::string Key(const std::vector<std::string>& models, int gpus);
  // A key back into its base models (repeats spelled out) and device
  // count; INVALID_ARGUMENT naming what does not parse.
  struct Workload {
    std::vector<std::string> models;
    int gpus = 0;
  };
  static absl::StatusOr<Workload> ParseKey(const std::string& key);

  const InssWorkloadSamplerOptions& options() const { return options_; }

 private:
  ClusterSnapshot pool_;
  PolicyOptions policy_options_;
  InssCheckpointInfo info_;
  InssWorkloadSamplerOptions options_;
};

}  // namespace tessera
