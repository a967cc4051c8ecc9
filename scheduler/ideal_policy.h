#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Exhaustive search, for small clusters: every partition layout of the used
// GPUs (whole, 20/80, 40/60, 50/50; GPUs are identical, so layouts are
// taken as multisets) and every assignment of each model to a non-empty set
// of gpulets (its rate split in proportion to what each gpulet sustains
// alone, or with all of them but one saturated; smaller sets first),
// time-sharing (at most 3 models a gpulet) and the configured interference
// model included; the first feasible plan in order of GPUs used wins.
// Depth-first with pruning (a set that cannot carry the rate alone, a gpulet
// that becomes infeasible). Cost grows as layouts x (2^gpulets)^models: the
// search refuses (FAILED_PRECONDITION) beyond kMaxGpus GPUs or kMaxModels
// models, and answers DEADLINE_EXCEEDED rather than a non-exhaustive result
// when it exceeds its node budget.
class IdealPolicy : public SchedulingPolicy {
 public:
  static constexpr int kMaxGpus = 4;
  static constexpr int kMaxModels = 4;

  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);
  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  std::string name() const override { return "ideal"; }

 private:
  explicit IdealPolicy(PolicyOptions options) : options_(std::move(options)) {}
  PolicyOptions options_;
};

}  // namespace tessera
