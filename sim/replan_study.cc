#include "sim/replan_study.h"

#include <algorithm>
#include <random>

#include "scheduler/gpu_layout.h"
#include "scheduler/plan_check.h"
#include "scheduler/plan_ids.h"
#include "scheduler/policy_registry.h"

namespace tessera {

namespace {

// Gpulets of `next` that `current` does not run.
int CountNewGpulets(const Plan& current, const Plan& next) {
  const std::vector<bool> fresh = NewGpulets(current, next);
  return static_cast<int>(std::count(fresh.begin(), fresh.end(), true));
}

// The snapshot with every model's rate multiplied by its factor.
ClusterSnapshot WithRates(const ClusterSnapshot& base,
                          const std::vector<double>& factors) {
  ClusterSnapshot s = base;
  for (size_t i = 0; i < s.models.size(); ++i) {
    s.models[i].rate_rps *= factors[i];
  }
  return s;
}

}  // namespace

double ReplanStudy::Change::Ratio(double incremental, double scratch) {
  if (scratch <= 0) return incremental > 0 ? 2 : 1;
  return incremental / scratch;
}

absl::StatusOr<std::vector<ReplanStudy::CaseResult>> ReplanStudy::Run(
    const std::string& policy, const PolicyOptions& policy_options,
    const std::vector<SuiteCase>& cases) const {
  auto p = PolicyRegistry::Create(policy, policy_options);
  if (!p.ok()) return p.status();
  std::vector<CaseResult> out;
  for (size_t i = 0; i < cases.size(); ++i) {
    out.push_back(RunCase(**p, policy_options, cases[i], options_.seed + i));
  }
  return out;
}

ReplanStudy::CaseResult ReplanStudy::RunCase(
    const SchedulingPolicy& policy, const PolicyOptions& policy_options,
    const SuiteCase& c, uint32_t seed) const {
  CaseResult result;
  result.label = c.label();
  const ClusterSnapshot base = MakeV100Snapshot(
      *setup_, options_.gpus, c.workload, options_.base_rate_rps, c.slo_factor);
  const ClusterSimulator sim(setup_->truth.get(), Configs(base));
  const SearchResult limit =
      SearchMaxThroughput(policy, base, sim, options_.sim, 0.01);
  if (limit.best.scale <= 0) return result;
  const ClusterSnapshot at_r0 =
      WithRates(base, std::vector<double>(base.models.size(),
                                          options_.load * limit.best.scale));
  absl::StatusOr<Plan> first = policy.Schedule(at_r0);
  if (!first.ok()) return result;
  // The plan in force as the frontend holds it: ids assigned, epoch 1.
  Plan in_force = *first;
  AssignGpuletIds(Plan(), &in_force);
  in_force.set_epoch(1);
  result.planned = true;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> factor(1 - options_.spread,
                                                1 + options_.spread);
  for (int k = 0; k < options_.changes; ++k) {
    std::vector<double> factors;
    for (size_t i = 0; i < base.models.size(); ++i) {
      factors.push_back(factor(rng));
    }
    ClusterSnapshot at_r1 = WithRates(at_r0, factors);
    at_r1.current_plan = Plan();
    absl::StatusOr<Plan> scratch = policy.Schedule(at_r1);
    at_r1.current_plan = in_force;
    absl::StatusOr<Plan> incremental = policy.Schedule(at_r1);
    if (!scratch.ok() || !incremental.ok()) continue;  // r1 unschedulable
    Change change;
    change.moved_scratch = CountNewGpulets(in_force, *scratch);
    change.moved_incremental = CountNewGpulets(in_force, *incremental);
    const std::string& reason = incremental->reason();
    change.repaired =
        reason.rfind("the plan in force, its broken gpulets", 0) == 0;
    change.kept = !change.repaired && change.moved_incremental == 0 &&
                  reason.rfind("the plan in force", 0) == 0;
    change.fixed_hold_scratch =
        PlanHoldScale(*scratch, at_r1, sim, options_.sim);
    change.fixed_hold_incremental =
        PlanHoldScale(*incremental, at_r1, sim, options_.sim);
    // Re-batched by the shared check, with the policy's interference
    // model and Tessera's interference charge.
    auto inputs = PolicyInputs::FromSnapshot(at_r1, policy_options);
    if (!inputs.ok()) continue;
    const PlanCheck check(
        inputs->get(), policy_options.interference.get(),
        policy_options.rules.tessera().interference_within_headroom());
    auto rebatched = [&check](const Plan& plan) {
      return [&check, &plan](double m) { return check.Rebatch(plan, m); };
    };
    change.hold_scratch =
        PlanHoldScale(rebatched(*scratch), at_r1, sim, options_.sim);
    change.hold_incremental =
        PlanHoldScale(rebatched(*incremental), at_r1, sim, options_.sim);
    result.changes.push_back(change);
  }
  return result;
}

void ReplanStudy::Print(const std::vector<CaseResult>& results, FILE* out) {
  std::fprintf(out, "%-36s %8s %6s %8s %16s %16s %11s %11s %11s\n", "case",
               "re-plans", "kept", "repaired", "new incremental", "new scratch",
               "worst hold", "mean hold", "worst fixed");
  int replans = 0, kept = 0, repaired = 0, moved_inc = 0, moved_scratch = 0;
  int below = 0;
  int fixed_below = 0;
  double worst_all = 2, sum_all = 0, fixed_worst_all = 2;
  for (const CaseResult& r : results) {
    if (!r.planned) {
      std::fprintf(out, "%-36s %8s\n", r.label.c_str(), "refused");
      continue;
    }
    int k = 0, rp = 0, mi = 0, ms = 0;
    double worst = 2, sum = 0, fixed_worst = 2;
    for (const Change& c : r.changes) {
      k += c.kept;
      rp += c.repaired;
      mi += c.moved_incremental;
      ms += c.moved_scratch;
      worst = std::min(worst, c.ratio());
      fixed_worst = std::min(fixed_worst, c.fixed_ratio());
      sum += c.ratio();
      below += c.ratio() < 0.98;
      fixed_below += c.fixed_ratio() < 0.98;
    }
    const int n = static_cast<int>(r.changes.size());
    std::fprintf(out, "%-36s %8d %6d %8d %16d %16d %11.3f %11.3f %11.3f\n",
                 r.label.c_str(), n, k, rp, mi, ms, n ? worst : 0,
                 n ? sum / n : 0, n ? fixed_worst : 0);
    if (n) fixed_worst_all = std::min(fixed_worst_all, fixed_worst);
    replans += n;
    kept += k;
    repaired += rp;
    moved_inc += mi;
    moved_scratch += ms;
    if (n) worst_all = std::min(worst_all, worst);
    sum_all += sum;
  }
  std::fprintf(out, "%-36s %8d %6d %8d %16d %16d %11.3f %11.3f %11.3f\n", "all",
               replans, kept, repaired, moved_inc, moved_scratch,
               replans ? worst_all : 0, replans ? sum_all / replans : 0,
               replans ? fixed_worst_all : 0);
  std::fprintf(
      out,
      "hold: the largest multiple of the new rates the incremental plan "
      "holds over the plan from scratch's (ground truth, <= 1 %% violations "
      "per model), each re-batched for every load by the shared check; "
      "below 0.98 on %d of %d re-plans (fixed: with the batches planned "
      "for the new rates, below 0.98 on %d)\n",
      below, replans, fixed_below);
}

}  // namespace tessera
