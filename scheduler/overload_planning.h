#pragma once

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

struct OverloadPlan {
  Plan plan;
  // Fraction of the snapshot's rates the plan was made for (1: all).
  double scale = 1;
};

// What a serving system does when the load exceeds what its policy can
// place (e.g. after losing a GPU): rather than keep a plan that routes to
// lost devices or serve nothing, plan for 80%, 64%, ... of every model's
// rate (never below `min_rate_rps`, down to 5%) until the policy accepts;
// requests beyond the plan are rejected early by their deadlines. Other
// errors, and RESOURCE_EXHAUSTED even at 5%, are returned. Used by the
// frontend and, to predict it, by the simulator.
absl::StatusOr<OverloadPlan> ScheduleWithOverload(
    const SchedulingPolicy& policy, ClusterSnapshot snapshot,
    double min_rate_rps);

}  // namespace tessera
