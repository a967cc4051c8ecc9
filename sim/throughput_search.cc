#include "sim/throughput_search.h"

#include <algorithm>

namespace tessera {

ScaleOutcome EvaluateScale(const SchedulingPolicy& policy,
                           const ClusterSnapshot& base,
                           const ClusterSimulator& simulator,
                           const SimOptions& options, double scale) {
  ScaleOutcome out;
  out.scale = scale;
  ClusterSnapshot snapshot = base;
  std::map<std::string, double> rates;
  for (ModelSnapshot& m : snapshot.models) {
    m.rate_rps *= scale;
    rates[m.config.name()] = m.rate_rps;
  }
  auto plan = policy.Schedule(snapshot);
  if (!plan.ok()) {
    out.inconclusive = absl::IsDeadlineExceeded(plan.status());
    return out;
  }
  out.schedulable = true;
  out.plan = *plan;
  out.sim = simulator.Run(*plan, rates, options);
  return out;
}

SearchResult SearchMaxThroughput(const SchedulingPolicy& policy,
                                 const ClusterSnapshot& base,
                                 const ClusterSimulator& simulator,
                                 const SimOptions& options, double limit) {
  SearchResult result;
  auto eval = [&](double s) {
    ++result.runs;
    ScaleOutcome o = EvaluateScale(policy, base, simulator, options, s);
    if (o.inconclusive) result.inconclusive = true;
    if (o.schedulable) {
      result.max_schedulable_scale = std::max(result.max_schedulable_scale, s);
    }
    return o;
  };
  double lo = 0, hi = 0;
  ScaleOutcome best;
  ScaleOutcome o = eval(1.0);
  if (o.feasible(limit)) {
    lo = 1.0;
    best = o;
    for (double s = 2.0;; s *= 2) {
      ScaleOutcome t = eval(s);
      if (!t.feasible(limit)) {
        hi = s;
        break;
      }
      lo = s;
      best = t;
      if (s > 1e6) break;
    }
  } else {
    hi = 1.0;
    for (double s = 0.5; s > 1e-4; s /= 2) {
      ScaleOutcome t = eval(s);
      if (t.feasible(limit)) {
        lo = s;
        best = t;
        break;
      }
      hi = s;
    }
    if (lo == 0) return result;
  }
  while (hi - lo > 0.01 * lo) {
    const double mid = (lo + hi) / 2;
    ScaleOutcome t = eval(mid);
    if (t.feasible(limit)) {
      lo = mid;
      best = t;
    } else {
      hi = mid;
    }
  }
  // Schedulable but infeasible scales above lo also count toward
  // max_schedulable_scale; probe the policy alone up to 4x the best.
  for (double s = std::max(lo, result.max_schedulable_scale) * 1.05;
       s < 4 * std::max(lo, 1e-9); s *= 1.05) {
    ClusterSnapshot snapshot = base;
    for (ModelSnapshot& m : snapshot.models) m.rate_rps *= s;
    if (!policy.Schedule(snapshot).ok()) break;
    result.max_schedulable_scale = s;
  }
  result.best = best;
  double total = 0;
  for (const ModelSnapshot& m : base.models) total += m.rate_rps * lo;
  result.max_throughput_rps = total;
  return result;
}

}  // namespace tessera
