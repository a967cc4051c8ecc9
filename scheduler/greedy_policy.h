#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/inputs_policy.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// The spatial-only baseline of the gpulet paper ("greedy best-fit"): every
// model gets the smallest partition (20/40/50/60/80/100 %) that serves its
// rate within its SLO (whole saturated GPUs first when the rate exceeds
// what one GPU serves), and partitions are packed best-fit, at most two
// per GPU, with no temporal sharing and no interference model.
class GreedyPolicy : public InputsPolicy {
 public:
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);
  std::string name() const override { return "greedy"; }

 protected:
  const PolicyOptions& options() const override { return options_; }
  absl::StatusOr<Plan> PlanFrom(const PolicyInputs& inputs) const override;

 private:
  explicit GreedyPolicy(PolicyOptions options) : options_(std::move(options)) {}
  PolicyOptions options_;
};

}  // namespace tessera
