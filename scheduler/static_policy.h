#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Returns the plan given in the configuration, after checking it against
// the snapshot: every device exists, every model is known, shares are in
// (0, 100] and sum to at most 100 per device, batch sizes are within each
// model's max_batch_size, and every model is served by some gpulet.
class StaticPolicy : public SchedulingPolicy {
 public:
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);

  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  std::string name() const override { return "static"; }

 private:
  explicit StaticPolicy(Plan plan) : plan_(std::move(plan)) {}
  Plan plan_;
};

}  // namespace tessera
