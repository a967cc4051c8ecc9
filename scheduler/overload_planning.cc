#include "scheduler/overload_planning.h"

#include <algorithm>
#include <map>
#include <string>

namespace tessera {

absl::StatusOr<OverloadPlan> ScheduleWithOverload(
    const SchedulingPolicy& policy, ClusterSnapshot snapshot,
    double min_rate_rps) {
  std::map<std::string, double> observed;
  for (const ModelSnapshot& m : snapshot.models) {
    observed[m.config.name()] = m.rate_rps;
  }
  OverloadPlan out;
  auto plan = policy.Schedule(snapshot);
  while (absl::IsResourceExhausted(plan.status()) && out.scale > 0.05) {
    out.scale *= 0.8;
    for (ModelSnapshot& m : snapshot.models) {
      m.rate_rps =
          std::max(min_rate_rps, observed[m.config.name()] * out.scale);
    }
    plan = policy.Schedule(snapshot);
  }
  if (!plan.ok()) return plan.status();
  out.plan = std::move(*plan);
  return out;
}

}  // namespace tessera
