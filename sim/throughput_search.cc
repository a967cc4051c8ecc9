#include "sim/throughput_search.h"

#include "scheduler/overload_planning.h"

#include <algorithm>

namespace tessera {

SimOptions RunOptions(const SimOptions& options,
                      const std::map<std::string, double>& rates) {
  double slowest = 0;
  for (const auto& [name, r] : rates) {
    if (r > 0 && (slowest == 0 || r < slowest)) slowest = r;
  }
  SimOptions run = options;
  if (slowest > 0 && options.min_requests > 0) {
    const double need_s =
        options.min_requests / slowest + absl::ToDoubleSeconds(options.warmup);
    if (need_s > absl::ToDoubleSeconds(options.duration)) {
      run.duration = absl::Seconds(need_s);
    }
  }
  return run;
}

ScaleOutcome EvaluateScale(const SchedulingPolicy& policy,
                           const ClusterSnapshot& base,
                           const ClusterSimulator& simulator,
                           const SimOptions& options, double scale,
                           bool overload) {
  ScaleOutcome out;
  out.scale = scale;
  ClusterSnapshot snapshot = base;
  std::map<std::string, double> rates;
  for (ModelSnapshot& m : snapshot.models) {
    m.rate_rps *= scale;
    rates[m.config.name()] = m.rate_rps;
  }
  absl::StatusOr<Plan> plan;
  if (overload) {
    auto o = ScheduleWithOverload(policy, snapshot, 0);
    if (o.ok()) {
      out.planned_fraction = o->scale;
      plan = std::move(o->plan);
    } else {
      plan = o.status();
    }
  } else {
    plan = policy.Schedule(snapshot);
  }
  if (!plan.ok()) {
    out.inconclusive = absl::IsDeadlineExceeded(plan.status());
    return out;
  }
  out.schedulable = true;
  out.plan = *plan;
  out.sim = simulator.Run(*plan, rates, RunOptions(options, rates));
  return out;
}

SearchResult SearchMaxThroughput(const SchedulingPolicy& policy,
                                 const ClusterSnapshot& base,
                                 const ClusterSimulator& simulator,
                                 const SimOptions& options, double limit,
                                 bool overload) {
  SearchResult result;
  auto eval = [&](double s) {
    ++result.runs;
    ScaleOutcome o =
        EvaluateScale(policy, base, simulator, options, s, overload);
    if (o.inconclusive) result.inconclusive = true;
    if (o.schedulable) {
      result.max_schedulable_scale = std::max(result.max_schedulable_scale, s);
    }
    return o;
  };
  // The gpulet paper's definition: raise the load until violations exceed
  // 1 % (or the policy refuses it). Feasibility is not monotone in the
  // load (a plan that packs models tightly at one load can violate while
  // the plan for a higher load, spread over more GPUs, holds), so scan
  // upward from a light load in 15 % steps to the first failure, then
  // bisect between the last success and it.
  constexpr double kStart = 1.0 / 64, kStep = 1.15, kMax = 4096;
  double lo = 0, hi = 0;
  ScaleOutcome best;
  auto limit_of = [](const ScaleOutcome& o) {
    return o.schedulable ? SearchResult::Limit::kViolated
                         : SearchResult::Limit::kRefused;
  };
  for (double s = kStart; s <= kMax; s *= kStep) {
    ScaleOutcome o = eval(s);
    if (!o.feasible(limit)) {
      hi = s;
      result.limit = limit_of(o);
      result.failed = std::move(o);
      break;
    }
    lo = s;
    best = std::move(o);
  }
  if (lo == 0 || hi == 0) {
    result.best = best;
    return result;
  }
  while (hi - lo > 0.01 * lo) {
    const double mid = (lo + hi) / 2;
    ScaleOutcome t = eval(mid);
    if (t.feasible(limit)) {
      lo = mid;
      best = std::move(t);
    } else {
      hi = mid;
      result.limit = limit_of(t);
      result.failed = std::move(t);
    }
  }
  result.best = best;
  double total = 0;
  for (const ModelSnapshot& m : base.models) total += m.rate_rps * lo;
  result.max_throughput_rps = total;
  return result;
}

namespace {

// Simulates `plan` with the snapshot's rates times `scale`.
bool PlanHolds(const Plan& plan, const ClusterSnapshot& base, double scale,
               const ClusterSimulator& simulator, const SimOptions& options,
               double limit) {
  std::map<std::string, double> rates;
  for (const ModelSnapshot& m : base.models) {
    rates[m.config.name()] = m.rate_rps * scale;
  }
  return simulator.Run(plan, rates, RunOptions(options, rates))
             .max_model_violation_fraction() <= limit;
}

using PlanAt = std::function<absl::StatusOr<Plan>(double)>;

// Simulates the plan `plan_at(scale)` with the snapshot's rates times
// `scale`; an error does not hold.
bool PlanAtHolds(const PlanAt& plan_at, const ClusterSnapshot& base,
                 double scale, const ClusterSimulator& simulator,
                 const SimOptions& options, double limit) {
  const absl::StatusOr<Plan> plan = plan_at(scale);
  return plan.ok() && PlanHolds(*plan, base, scale, simulator, options, limit);
}

// The largest multiple m in [1, 64] of `scale` at which the plan holds,
// given that it holds at m = 1: a scan in 5 % steps, then bisection to 1 %.
double HoldMultiple(const PlanAt& plan_at, const ClusterSnapshot& base,
                    double scale, const ClusterSimulator& simulator,
                    const SimOptions& options, double limit) {
  auto holds = [&](double m) {
    return PlanAtHolds(plan_at, base, scale * m, simulator, options, limit);
  };
  double lo = 1, hi = 1;
  while (hi < 64) {
    hi *= 1.05;
    if (!holds(hi)) break;
    lo = hi;
  }
  if (hi >= 64) return lo;
  while (hi - lo > 0.01 * lo) {
    const double mid = (lo + hi) / 2;
    (holds(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

double PlanHoldScale(const PlanAt& plan_at, const ClusterSnapshot& base,
                     const ClusterSimulator& simulator,
                     const SimOptions& options, double limit) {
  if (!PlanAtHolds(plan_at, base, 1, simulator, options, limit)) return 0;
  return HoldMultiple(plan_at, base, 1, simulator, options, limit);
}

double PlanHoldScale(const Plan& plan, const ClusterSnapshot& base,
                     const ClusterSimulator& simulator,
                     const SimOptions& options, double limit) {
  return PlanHoldScale([&plan](double) { return plan; }, base, simulator,
                       options, limit);
}

double PlannerEfficiency(const SearchResult& search,
                         const ClusterSnapshot& base,
                         const ClusterSimulator& simulator,
                         const SimOptions& options, double limit,
                         double* hold_scale) {
  const bool broken = search.limit == SearchResult::Limit::kViolated &&
                      search.failed.schedulable;
  const ScaleOutcome& at = broken ? search.failed : search.best;
  if (!at.schedulable || search.limit == SearchResult::Limit::kNone) return 0;
  const double accepted = at.scale;
  // The largest multiple m of the accepted load the plan holds at: scan
  // in 5 % steps from where it is known to hold (or down from a break),
  // then bisect to 1 %.
  if (!broken) {
    const double lo = HoldMultiple([&at](double) { return at.plan; }, base,
                                   accepted, simulator, options, limit);
    if (hold_scale != nullptr) *hold_scale = lo;
    return 1 / lo;
  }
  double lo = 1, hi = 1;
  while (lo > 1.0 / 64) {
    lo /= 1.05;
    if (PlanHolds(at.plan, base, accepted * lo, simulator, options, limit)) {
      break;
    }
    hi = lo;
  }
  while (hi - lo > 0.01 * lo) {
    const double mid = (lo + hi) / 2;
    (PlanHolds(at.plan, base, accepted * mid, simulator, options, limit) ? lo
                                                                         : hi) =
        mid;
  }
  if (hold_scale != nullptr) *hold_scale = lo;
  return 1 / lo;
}

}  // namespace tessera
