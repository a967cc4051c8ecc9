#pragma once

#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"
#include "sim/cluster_simulator.h"

namespace tessera {

struct ScaleOutcome {
  double scale = 0;
  bool schedulable = false;  // the policy produced a plan
  // Fraction of the load the plan was made for (< 1: overloaded, planned
  // as the frontend does, see scheduler/overload_planning.h).
  double planned_fraction = 1;
  // The policy could not decide (e.g. ideal ran out of its search budget).
  bool inconclusive = false;
  Plan plan;
  SimResult sim;  // valid when schedulable
  // The plan holds: every model's violations <= limit (never pooled).
  bool feasible(double limit) const {
    return schedulable && sim.max_model_violation_fraction() <= limit;
  }
};

struct SearchResult {
  // Largest uniform rate scale whose plan keeps violations <= limit in
  // simulation, and the total rate there.
  ScaleOutcome best;
  double max_throughput_rps = 0;
  // The evaluation just above `best` that ended the search (refused or
  // broken); unset (scale 0) when the scan reached its maximum.
  ScaleOutcome failed;
  // Largest scale the scan saw the policy call schedulable (simulation
  // not consulted).
  double max_schedulable_scale = 0;
  int runs = 0;
  // What ended the search at the load just above the best one.
  enum class Limit {
    kNone,      // the scan reached its maximum scale
    kRefused,   // the policy called that load unschedulable
    kViolated,  // the policy planned it and the plan broke the limit
  };
  Limit limit = Limit::kNone;
  // Some evaluation was inconclusive: the result is not trustworthy.
  bool inconclusive = false;
};

// Scales every model's base rate in `base` by s, asks `policy` for a plan
// and simulates it. As in the gpulet paper, the load is raised until
// violations exceed `limit` (or the policy refuses the load): an upward
// scan from s = 1/64 in 15 % steps to the first failure, then bisection to
// 1 % precision. (Feasibility is not monotone in s, so the first failure
// is what an operator raising the load would meet.)
// With `overload` the policy's refusals are planned around as the live
// frontend does (ScheduleWithOverload), so the prediction is comparable
// to a measurement on the live cluster.
SearchResult SearchMaxThroughput(const SchedulingPolicy& policy,
                                 const ClusterSnapshot& base,
                                 const ClusterSimulator& simulator,
                                 const SimOptions& options, double limit = 0.01,
                                 bool overload = false);

// The largest multiple m of the snapshot's rates (each model's rate times
// m, 1 % precision, up to 64) at which `plan`, as it is, holds in the
// ground truth (every model's violations <= limit); 0 when it does not
// hold at m = 1. The throughput a plan holds, without its policy.
double PlanHoldScale(const Plan& plan, const ClusterSnapshot& base,
                     const ClusterSimulator& simulator,
                     const SimOptions& options, double limit = 0.01);
// The same for the plan `plan_at(m)` returns for the rates times m (e.g.
// one placement re-batched for each load, PlanCheck::Rebatch); an error
// counts as not holding.
double PlanHoldScale(const std::function<absl::StatusOr<Plan>(double)>& plan_at,
                     const ClusterSnapshot& base,
                     const ClusterSimulator& simulator,
                     const SimOptions& options, double limit = 0.01);

// Planner efficiency (MEASURES.md) of a search's limit: the load the policy
// accepted there / the largest load at which that accepted plan, with every
// rate scaled up (or down) together, still holds in the ground truth. At a
// refusal the plan is the one at the best load (<= 1: load refused that its
// plan would hold); at a broken plan it is the broken one (> 1). 0 when
// there is no limit to measure (nothing held, or the scan reached its
// maximum). `hold_scale`, if given, receives the largest holding multiple
// of the plan's load.
double PlannerEfficiency(const SearchResult& search,
                         const ClusterSnapshot& base,
                         const ClusterSimulator& simulator,
                         const SimOptions& options, double limit = 0.01,
                         double* hold_scale = nullptr);

// `options` with the duration stretched so that every model with a rate
// sees options.min_requests arrivals after the warm-up.
SimOptions RunOptions(const SimOptions& options,
                      const std::map<std::string, double>& rates);

// One scale: plan and simulate.
ScaleOutcome EvaluateScale(const SchedulingPolicy& policy,
                           const ClusterSnapshot& base,
                           const ClusterSimulator& simulator,
                           const SimOptions& options, double scale,
                           bool overload = false);

}  // namespace tessera
