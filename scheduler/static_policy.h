#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Returns the plan given in the configuration, after checking it against
// the snapshot: every device exists, shares are in (0, 100] and sum to at
// most 100 per device, batch sizes are within each model's max_batch_size,
// and every model of the snapshot is served by some gpulet. Assignments of
// models the snapshot lacks (unloaded through the repository API) are left
// out, and so are the gpulets they leave empty; a name that is in no
// repository at all is refused when the frontend starts
// (CheckStaticPlanModels).
class StaticPolicy : public SchedulingPolicy {
 public:
  // INVALID_ARGUMENT naming the first model of `plan` that is not in
  // `known` (the repository's models, those skipped as invalid included).
  static absl::Status CheckStaticPlanModels(const Plan& plan,
                                            const std::set<std::string>& known);
  // INVALID_ARGUMENT naming the first of `served` (the repository's valid
  // models) that no gpulet of `plan` serves: under the static policy it
  // would leave every plan refused, so the frontend refuses to start.
  static absl::Status CheckStaticPlanServes(
      const Plan& plan, const std::vector<std::string>& served);

  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);

  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  std::string name() const override { return "static"; }

 private:
  explicit StaticPolicy(Plan plan) : plan_(std::move(plan)) {}
  Plan plan_;
};

}  // namespace tessera
