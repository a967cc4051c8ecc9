#include "scheduler/inputs_policy.h"

#include "common/status_macros.h"

namespace tessera {

absl::StatusOr<Plan> InputsPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  ASSIGN_OR_RETURN(auto inputs,
                   PolicyInputs::FromSnapshot(snapshot, options()));
  return PlanFrom(*inputs);
}

absl::StatusOr<Plan> InputsPolicy::ScheduleWithInputs(
    const ClusterSnapshot& snapshot, const PolicyInputs& inputs) const {
  if (!inputs.BuiltUnder(options().rules.shared())) return Schedule(snapshot);
  return PlanFrom(inputs);
}

}  // namespace tessera
