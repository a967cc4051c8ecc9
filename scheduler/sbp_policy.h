#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/inputs_policy.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Nexus' squishy bin packing, the temporal-only baseline of the gpulet
// paper: whole GPUs, no spatial partitions. Each model gets as many
// saturated GPUs as its rate fills (largest batch with 2 L <= SLO, running
// back to back); the residues are packed best-fit decreasing by occupancy
// onto shared GPUs under the time-sharing rules of SolveTimeShare.
class SbpPolicy : public InputsPolicy {
 public:
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);
  std::string name() const override { return "sbp"; }

 protected:
  const PolicyOptions& options() const override { return options_; }
  absl::StatusOr<Plan> PlanFrom(const PolicyInputs& inputs) const override;

 private:
  explicit SbpPolicy(PolicyOptions options) : options_(std::move(options)) {}
  PolicyOptions options_;
};

}  // namespace tessera
