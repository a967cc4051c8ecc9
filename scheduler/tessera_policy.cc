#include "scheduler/tessera_policy.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/gpulet_placer.h"
#include "scheduler/layout_multisets.h"
#include "scheduler/plan_check.h"
#include "scheduler/plan_ids.h"
#include "scheduler/plan_repair.h"
#include "scheduler/policy_registry.h"
#include "scheduler/share_fill.h"
#include "scheduler/time_share_solver.h"

namespace tessera {
namespace {

constexpr double kShareEpsilon = 1e-6;
// Margins closer than this are a tie (the search's resolution is
// (kMarginMaxScale - 1) / 2^kMarginSteps).
constexpr double kMarginTolerance = 0.1;

// Builds the seed policies `names`; the gpulet seed plans with Tessera's
// interference charge.
absl::StatusOr<std::vector<std::unique_ptr<SchedulingPolicy>>> MakeSeeds(
    const google::protobuf::RepeatedPtrField<std::string>& names,
    const PolicyOptions& options) {
  PolicyOptions gpulet_options = options;
  gpulet_options.rules.mutable_gpulet()->set_interference_within_headroom(
      options.rules.tessera().interference_within_headroom());
  gpulet_options.rules.mutable_gpulet()->clear_interference_headroom();
  std::vector<std::unique_ptr<SchedulingPolicy>> seeds;
  for (const std::string& name : names) {
    if (name == "tessera") {
      return absl::InvalidArgumentError(
          "tessera: 'tessera' cannot seed itself");
    }
    auto seed = PolicyRegistry::Create(
        name, name == "gpulet" ? gpulet_options : options);
    if (!seed.ok()) {
      return absl::Status(seed.status().code(),
                          absl::StrCat("tessera: seed policy '", name,
                                       "': ", seed.status().message()));
    }
    seeds.push_back(*std::move(seed));
  }
  return seeds;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> TesseraPolicy::Create(
    const PolicyOptions& options) {
  const TesseraRules& rules = options.rules.tessera();
  if (options.interference == nullptr && rules.layout_budget() > 0) {
    return absl::InvalidArgumentError(
        "tessera: its layout search plans with an interference model (the "
        "frontend's interference_profile); none is configured (or set "
        "rules { tessera { layout_budget: 0 } })");
  }
  google::protobuf::RepeatedPtrField<std::string> names = rules.seed_policies();
  if (options.inss_actor != nullptr &&
      std::find(names.begin(), names.end(), "inss") == names.end()) {
    *names.Add() = "inss";
  }
  ASSIGN_OR_RETURN(auto seeds, MakeSeeds(names, options));
  ASSIGN_OR_RETURN(auto large, MakeSeeds(rules.large_cluster_seeds(), options));
  return std::unique_ptr<SchedulingPolicy>(
      new TesseraPolicy(options, std::move(seeds), std::move(large)));
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

int TesseraPolicy::FloorOrder(const TesseraRules& rules, const Cost& a,
                              const Cost& b) {
  const double floor = rules.fewest_gpus_min_room();
  if (floor <= 1) return 0;
  const double ra = std::min(a.margin, floor);
  const double rb = std::min(b.margin, floor);
  if (ra > rb + kMarginTolerance) return 1;
  if (ra < rb - kMarginTolerance) return -1;
  return 0;
}

bool TesseraPolicy::Better(const TesseraRules& rules, const Cost& a,
                           const Cost& b) {
  if (rules.objective() == TESSERA_OBJECTIVE_FEWEST_GPUS) {
    if (const int order = FloorOrder(rules, a, b); order != 0) {
      return order > 0;
    }
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
  }
  if (a.margin > b.margin + kMarginTolerance) return true;
  if (a.margin < b.margin - kMarginTolerance) return false;
  if (a.share < b.share - kShareEpsilon) return true;
  if (a.share > b.share + kShareEpsilon) return false;
  return a.moved < b.moved;
}

std::optional<TesseraPolicy::Candidate> TesseraPolicy::KeptPlan(
    const ClusterSnapshot& snapshot, const Inputs& inputs) const {
  const Plan& current = snapshot.current_plan;
  if (!MayKeep(current) || !inputs.ok()) return std::nullopt;
  const PlanCheck check = SharedCheck(**inputs);
  absl::StatusOr<Plan> rebatched = check.Rebatch(current);
  if (!rebatched.ok()) return std::nullopt;
  Candidate c{*std::move(rebatched),
              "the plan in force, which still holds today's rates",
              {}};
  c.cost = CostOf(c.plan, current);
  c.cost.margin = check.ScaleMargin(current, kMarginMaxScale, kMarginSteps);
  return c;
}

absl::StatusOr<std::vector<TesseraPolicy::Candidate>>
TesseraPolicy::LayoutCandidates(const ClusterSnapshot& snapshot,
                                const Inputs& all_inputs) const {
  const int budget = options_.rules.tessera().layout_budget();
  if (budget <= 0) return std::vector<Candidate>{};
  RETURN_IF_ERROR(all_inputs.status());
  const PolicyInputs* inputs = all_inputs->get();
  // Fixed layouts are GPU layouts: a device with its own grid (a cpu
  // node) is left to the seeds.
  if (inputs->share_grid() != AllowedShares()) {
    return std::vector<Candidate>{};
  }
  std::vector<std::vector<const ModelDemand*>> orders = {
      GpuletPlacer::PaperOrder(inputs->demands())};
  if (orders[0].empty()) return std::vector<Candidate>{};
  const TesseraRules& rules = options_.rules.tessera();
  if (rules.layout_reverse_order() && orders[0].size() > 1) {
    orders.emplace_back(orders[0].rbegin(), orders[0].rend());
  }
  const auto& gpus = inputs->gpus();
  const GpuletPlacer placer = Placer();
  const auto& kinds = LayoutMultisets::GpuLayouts();
  // Every order gets the same layouts: the budget shared out.
  const int per_order = std::max<int>(1, budget / orders.size());
  const auto layouts =
      LayoutMultisets::Simplest(static_cast<int>(gpus.size()), per_order);
  std::vector<Candidate> best;
  int fit = 0, tried = 0;
  for (const auto& order : orders) {
    for (const std::vector<int>& choice : layouts) {
      std::vector<GpuLayout> trial;
      for (size_t g = 0; g < gpus.size(); ++g) {
        trial.emplace_back(gpus[g], kinds[choice[g]]);
      }
      ++tried;
      if (!placer.Partition(order, inputs->share_grid(), /*fixed=*/true, &trial)
               .ok()) {
        continue;
      }
      ++fit;
      Candidate c{BuildPlan(trial, name(), ""), "", {}};
      c.cost = CostOf(c.plan, snapshot.current_plan);
      if (best.empty() || Better(rules, c.cost, best[0].cost)) {
        best.assign(1, std::move(c));
      }
    }
  }
  if (!best.empty()) {
    best[0].source = absl::StrCat("gpulet's heuristic on fixed layouts (", fit,
                                  " fit of ", tried, " tried)");
  }
  return best;
}

GpuletPlacer TesseraPolicy::Placer() const {
  GpuletRules rules = options_.rules.gpulet();
  rules.set_interference_within_headroom(
      options_.rules.tessera().interference_within_headroom());
  return GpuletPlacer(options_.interference.get(), rules);
}

std::optional<TesseraPolicy::Candidate> TesseraPolicy::RepairedPlan(
    const ClusterSnapshot& snapshot, const Inputs& inputs,
    double rate_scale) const {
  const Plan& current = snapshot.current_plan;
  if (!options_.rules.tessera().repair_plan_in_force() || !MayKeep(current) ||
      !inputs.ok()) {
    return std::nullopt;
  }
  const GpuletPlacer placer = Placer();
  const PlanRepair repair(
      inputs->get(), options_.interference.get(), &placer,
      options_.rules.tessera().interference_within_headroom());
  absl::StatusOr<Plan> plan = repair.Repair(current, name(), rate_scale);
  const PlanCheck check = SharedCheck(**inputs);
  if (!plan.ok() || !check.Check(*plan).ok()) return std::nullopt;
  Candidate c{
      *std::move(plan), "the plan in force, its broken gpulets re-placed", {}};
  c.cost = CostOf(c.plan, current);
  Measure(snapshot, check, **inputs, &c);
  return c;
}

double TesseraPolicy::RepairTarget(std::vector<Candidate>& candidates) const {
  const TesseraRules& rules = options_.rules.tessera();
  if (rules.objective() == TESSERA_OBJECTIVE_FEWEST_GPUS) {
    return rules.fewest_gpus_min_room();
  }
  if (candidates.empty()) return 1;
  return std::max(1.0, BestOf(candidates).cost.margin);
}

absl::StatusOr<Plan> TesseraPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  const bool large = static_cast<int>(snapshot.devices.size()) >
                     options_.rules.tessera().large_cluster_gpus();
  // Demands, latency models and their memos, built once for the seeds,
  // the plan in force, the layout search and the margins (an error
  // surfaces where one needs them).
  const Inputs inputs = PolicyInputs::FromSnapshot(snapshot, options_);
  // A plan in force that still holds moves nothing; it is weighed against
  // the best new plan below.
  std::optional<Candidate> kept = KeptPlan(snapshot, inputs);
  std::vector<Candidate> candidates;
  std::vector<std::string> refusals;
  for (const auto& seed : large ? large_cluster_seeds_ : seeds_) {
    absl::StatusOr<Plan> plan =
        inputs.ok() ? seed->ScheduleWithInputs(snapshot, **inputs)
                    : seed->Schedule(snapshot);
    if (!plan.ok()) {
      refusals.push_back(
          absl::StrCat(seed->name(), ": ", plan.status().message()));
      continue;
    }
    Candidate c{*std::move(plan), absl::StrCat(seed->name(), "'s plan"), {}};
    c.cost = CostOf(c.plan, snapshot.current_plan);
    candidates.push_back(std::move(c));
  }
  std::vector<Candidate> from_layouts;
  if (!large) {
    ASSIGN_OR_RETURN(from_layouts, LayoutCandidates(snapshot, inputs));
  }
  if (!large && from_layouts.empty() &&
      options_.rules.tessera().layout_budget() > 0) {
    refusals.push_back("fixed layouts: gpulet's heuristic fits none");
  }
  for (Candidate& c : from_layouts) candidates.push_back(std::move(c));
  if (!large && !candidates.empty()) {
    RETURN_IF_ERROR(inputs.status());
    const PlanCheck check = SharedCheck(**inputs);
    for (Candidate& c : candidates) Measure(snapshot, check, **inputs, &c);
  }
  if (kept && (candidates.empty() || Keeps(*kept, BestOf(candidates)) ||
               HoldsItsGpus(*kept, BestOf(candidates)))) {
    return Finish(*std::move(kept), candidates.size() + 1);
  }
  if (!large) {
    if (std::optional<Candidate> repaired =
            RepairedPlan(snapshot, inputs, RepairTarget(candidates))) {
      candidates.push_back(*std::move(repaired));
    }
  }
  if (candidates.empty()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("tessera: no candidate plans the load (",
                     absl::StrJoin(refusals, "; "), ")"));
  }
  const size_t feasible = candidates.size();
  Candidate& best = BestOf(candidates);
  if (snapshot.current_plan.devices_size() > 0) {
    return Finish(std::move(FewestMoves(candidates, best)), feasible);
  }
  return Finish(std::move(best), feasible);
}

void TesseraPolicy::Measure(const ClusterSnapshot& snapshot,
                            const PlanCheck& check, const PolicyInputs& inputs,
                            Candidate* c) const {
  if (!options_.rules.tessera().fill_used_gpus()) {
    c->cost.margin = check.ScaleMargin(c->plan, kMarginMaxScale, kMarginSteps);
    return;
  }
  const std::vector<double>& grid = inputs.share_grid();
  const ShareFill fill(&check, grid, /*whole_percents=*/grid == AllowedShares(),
                       kMarginMaxScale, kMarginSteps);
  ShareFill::Result filled = fill.Fill(c->plan, snapshot.current_plan);
  if (filled.raised > 0) {
    c->plan = std::move(filled.plan);
    c->cost = CostOf(c->plan, snapshot.current_plan);
    absl::StrAppend(&c->source, ", grown into its GPUs' idle share (",
                    filled.raised, " gpulet(s))");
  }
  c->cost.margin = filled.margin;
}

bool TesseraPolicy::MayKeep(const Plan& current) const {
  return options_.rules.tessera().keep_plan_in_force() &&
         current.policy() == name() && current.devices_size() > 0;
}

PlanCheck TesseraPolicy::SharedCheck(const PolicyInputs& inputs) const {
  return PlanCheck(&inputs, options_.interference.get(),
                   options_.rules.tessera().interference_within_headroom());
}

bool TesseraPolicy::Keeps(const Candidate& kept, const Candidate& best) const {
  const TesseraRules& rules = options_.rules.tessera();
  if (rules.objective() == TESSERA_OBJECTIVE_FEWEST_GPUS) {
    if (const int order = FloorOrder(rules, kept.cost, best.cost); order != 0) {
      return order > 0;
    }
    return kept.cost.gpus <= best.cost.gpus;
  }
  return kept.cost.margin >= (1 - rules.keep_tolerance()) * best.cost.margin;
}

bool TesseraPolicy::HoldsItsGpus(const Candidate& kept,
                                 const Candidate& best) const {
  const TesseraRules& rules = options_.rules.tessera();
  const double release = rules.fewest_gpus_release_room();
  return rules.objective() == TESSERA_OBJECTIVE_FEWEST_GPUS && release > 1 &&
         best.cost.gpus < kept.cost.gpus &&
         best.cost.margin < release - kMarginTolerance &&
         kept.cost.margin >= best.cost.margin - kMarginTolerance;
}

TesseraPolicy::Candidate& TesseraPolicy::BestOf(
    std::vector<Candidate>& candidates) const {
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (Better(options_.rules.tessera(), candidates[i].cost,
               candidates[best].cost)) {
      best = i;
    }
  }
  return candidates[best];
}

TesseraPolicy::Candidate& TesseraPolicy::FewestMoves(
    std::vector<Candidate>& candidates, Candidate& best) const {
  if (!options_.rules.tessera().prefer_fewest_moves()) return best;
  Candidate* chosen = &best;
  for (Candidate& c : candidates) {
    if (&c == chosen || !Keeps(c, best)) continue;
    if (c.cost.moved < chosen->cost.moved ||
        (c.cost.moved == chosen->cost.moved &&
         Better(options_.rules.tessera(), c.cost, chosen->cost))) {
      chosen = &c;
    }
  }
  return *chosen;
}

Plan TesseraPolicy::Finish(Candidate chosen, size_t feasible) const {
  Plan plan = std::move(chosen.plan);
  plan.set_policy(name());
  plan.set_reason(absl::StrCat(
      chosen.source, ": ", chosen.cost.share, "% on ", chosen.cost.gpus,
      " GPU(s), holds ", chosen.cost.margin, "x the rates, ", chosen.cost.moved,
      " gpulet(s) new; ", feasible, " feasible candidate(s)"));
  return plan;
}

REGISTER_SCHEDULING_POLICY("tessera", TesseraPolicy::Create);

}  // namespace tessera
