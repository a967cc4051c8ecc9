#include "scheduler/tessera_policy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/gpulet_placer.h"
#include "scheduler/layout_multisets.h"
#include "scheduler/plan_ids.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

constexpr double kShareEpsilon = 1e-6;

}  // namespace

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> TesseraPolicy::Create(
    const PolicyOptions& options) {
  std::vector<std::string> names(
      options.rules.tessera().seed_policies().begin(),
      options.rules.tessera().seed_policies().end());
  if (options.inss_actor != nullptr &&
      std::find(names.begin(), names.end(), "inss") == names.end()) {
    names.push_back("inss");
  }
  if (options.interference == nullptr &&
      options.rules.tessera().layout_budget() > 0) {
    return absl::InvalidArgumentError(
        "tessera: its layout search plans with an interference model (the "
        "frontend's interference_profile); none is configured (or set "
        "rules { tessera { layout_budget: 0 } })");
  }
  std::vector<std::unique_ptr<SchedulingPolicy>> seeds;
  for (const std::string& name : names) {
    if (name == "tessera") {
      return absl::InvalidArgumentError(
          "tessera: 'tessera' cannot seed itself");
    }
    auto seed = PolicyRegistry::Create(name, options);
    if (!seed.ok()) {
      return absl::Status(seed.status().code(),
                          absl::StrCat("tessera: seed policy '", name,
                                       "': ", seed.status().message()));
    }
    seeds.push_back(*std::move(seed));
  }
  return std::unique_ptr<SchedulingPolicy>(
      new TesseraPolicy(options, std::move(seeds)));
}

TesseraPolicy::Cost TesseraPolicy::CostOf(const Plan& plan,
                                          const Plan& current) {
  Cost cost;
  for (const DevicePlan& d : plan.devices()) {
    bool used = false;
    for (const GpuletPlan& g : d.gpulets()) {
      if (g.models_size() == 0) continue;
      used = true;
      cost.share += g.share_percent();
    }
    cost.gpus += used ? 1 : 0;
  }
  Plan copy = plan;
  cost.moved = AssignGpuletIds(current, &copy);
  return cost;
}

bool TesseraPolicy::Better(TesseraObjective objective, const Cost& a,
                           const Cost& b) {
  if (objective == TESSERA_OBJECTIVE_FEWEST_GPUS && a.gpus != b.gpus) {
    return a.gpus < b.gpus;
  }
  if (a.share < b.share - kShareEpsilon) return true;
  if (a.share > b.share + kShareEpsilon) return false;
  return a.moved < b.moved;
}

absl::StatusOr<std::vector<TesseraPolicy::Candidate>>
TesseraPolicy::LayoutCandidates(const ClusterSnapshot& snapshot) const {
  const int budget = options_.rules.tessera().layout_budget();
  if (budget <= 0) return std::vector<Candidate>{};
  ASSIGN_OR_RETURN(std::unique_ptr<PolicyInputs> inputs,
                   PolicyInputs::FromSnapshot(snapshot, options_));
  // Fixed layouts are GPU layouts: a device with its own grid (a cpu
  // node) is left to the seeds.
  if (inputs->share_grid() != AllowedShares()) {
    return std::vector<Candidate>{};
  }
  const std::vector<const ModelDemand*> order =
      GpuletPlacer::PaperOrder(inputs->demands());
  if (order.empty()) return std::vector<Candidate>{};
  const auto& gpus = inputs->gpus();
  const GpuletPlacer placer(options_.interference.get(),
                            options_.rules.gpulet());
  const auto& kinds = LayoutMultisets::GpuLayouts();
  const auto layouts =
      LayoutMultisets::Simplest(static_cast<int>(gpus.size()), budget);
  std::vector<Candidate> best;
  int fit = 0;
  for (const std::vector<int>& choice : layouts) {
    std::vector<GpuLayout> trial;
    for (size_t g = 0; g < gpus.size(); ++g) {
      trial.emplace_back(gpus[g], kinds[choice[g]]);
    }
    if (!placer.Partition(order, inputs->share_grid(), /*fixed=*/true, &trial)
             .ok()) {
      continue;
    }
    ++fit;
    Candidate c{BuildPlan(trial, name(), ""), "", {}};
    c.cost = CostOf(c.plan, snapshot.current_plan);
    if (best.empty() ||
        Better(options_.rules.tessera().objective(), c.cost, best[0].cost)) {
      best.assign(1, std::move(c));
    }
  }
  if (!best.empty()) {
    best[0].source = absl::StrCat("gpulet's heuristic on fixed layouts (", fit,
                                  " fit of ", layouts.size(), " tried)");
  }
  return best;
}

absl::StatusOr<Plan> TesseraPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  const TesseraObjective objective = options_.rules.tessera().objective();
  std::vector<Candidate> candidates;
  std::vector<std::string> refusals;
  for (const auto& seed : seeds_) {
    absl::StatusOr<Plan> plan = seed->Schedule(snapshot);
    if (!plan.ok()) {
      refusals.push_back(
          absl::StrCat(seed->name(), ": ", plan.status().message()));
      continue;
    }
    Candidate c{*std::move(plan), absl::StrCat(seed->name(), "'s plan"), {}};
    c.cost = CostOf(c.plan, snapshot.current_plan);
    candidates.push_back(std::move(c));
  }
  ASSIGN_OR_RETURN(std::vector<Candidate> from_layouts,
                   LayoutCandidates(snapshot));
  if (from_layouts.empty() && options_.rules.tessera().layout_budget() > 0) {
    refusals.push_back("fixed layouts: gpulet's heuristic fits none");
  }
  for (Candidate& c : from_layouts) candidates.push_back(std::move(c));
  if (candidates.empty()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("tessera: no candidate plans the load (",
                     absl::StrJoin(refusals, "; "), ")"));
  }
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (Better(objective, candidates[i].cost, candidates[best].cost)) best = i;
  }
  Candidate& chosen = candidates[best];
  Plan plan = std::move(chosen.plan);
  plan.set_policy(name());
  plan.set_reason(absl::StrCat(chosen.source, ": ", chosen.cost.share, "% on ",
                               chosen.cost.gpus, " GPU(s), ", chosen.cost.moved,
                               " gpulet(s) new; ", candidates.size(),
                               " feasible candidate(s)"));
  return plan;
}

REGISTER_SCHEDULING_POLICY("tessera", TesseraPolicy::Create);

}  // namespace tessera
