#pragma once

// An emulated A100 under operator-group scheduling: a group takes the time
// the Abacus authors' fitted predictors give (A100GroundTruth, read from
// ../shared/data/abacus-a100 at start-up, evaluated in plain C++) with the
// paper's 4.5 % run-to-run noise, times the device's time scale. A query's
// "intermediate" is the checksum of its input rows, from which its last
// range writes the outputs (see emulated_outputs.h). Torch-free.

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model_config.pb.h"
#include "overlap/a100_ground_truth.h"
#include "proxy/group_queries.h"
#include "proxy/group_runner.h"

namespace tessera {

class EmulatedGroupRunner : public GroupRunner {
 public:
  struct Options {
    std::string ground_truth_dir;
    double time_scale = 1;
    uint64_t seed = 1;
    // Waits out a group's time; tests inject a fake.
    std::function<void(absl::Duration)> sleep;
  };
  // Every model with segment_count > 0 must be one of the seven A100
  // services (resnet50, resnet101, resnet152, inception_v3, vgg16, vgg19,
  // bert) with the artifact's operator count; BERT's first input is
  // [batch, sequence length]. Models without segments are left out.
  static absl::StatusOr<std::unique_ptr<EmulatedGroupRunner>> Create(
      const std::map<std::string, ModelConfig>& configs, Options options);

  absl::StatusOr<std::vector<std::vector<TensorView>>> RunGroup(
      const std::vector<GroupMemberRun>& members,
      absl::Duration* exec_time) override;
  int OperatorCount(const std::string& model) const override;

  // The ground truth's mean time of `group` (ms, before the time scale).
  double MeanMs(const OperatorGroup& group) const {
    return truth_->MeanMs(group);
  }

 private:
  struct Service {
    int id = 0;  // A100 catalog id
    const ModelConfig* config = nullptr;
  };
  struct QueryState {
    int batch = 0;
    int seqlen = 0;
    std::vector<uint64_t> row_sums;
  };

  EmulatedGroupRunner(std::map<std::string, ModelConfig> configs,
                      std::unique_ptr<A100GroundTruth> truth, Options options);
  using Queries = GroupQueries<QueryState>;
  // The member's query (see GroupQueries), its range added to `group`.
  absl::StatusOr<Queries::Query*> Admit(const GroupMemberRun& m,
                                        OperatorGroup* group);

  std::map<std::string, ModelConfig> configs_;
  std::map<std::string, Service> services_;
  std::unique_ptr<A100GroundTruth> truth_;
  Options options_;
  std::mt19937_64 rng_;
  Queries queries_;
};

}  // namespace tessera
