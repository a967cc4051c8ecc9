#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Nexus' squishy bin packing, the temporal-only baseline of the gpulet
// paper: whole GPUs, no spatial partitions. Each model gets as many
// saturated GPUs as its rate fills (largest batch with 2 L <= SLO, running
// back to back); the residues are packed best-fit decreasing by occupancy
// onto shared GPUs under the time-sharing rules of SolveTimeShare.
class SbpPolicy : public SchedulingPolicy {
 public:
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);
  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  absl::StatusOr<Plan> ScheduleWithInputs(
      const ClusterSnapshot& snapshot,
      const PolicyInputs& inputs) const override;
  std::string name() const override { return "sbp"; }

 private:
  explicit SbpPolicy(PolicyOptions options) : options_(std::move(options)) {}
  PolicyOptions options_;
};

}  // namespace tessera
