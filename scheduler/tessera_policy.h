#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/gpulet_placer.h"
#include "scheduler/plan_check.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Tessera's own placement policy ("tessera"). No single heuristic wins
// everywhere (whole-GPU replicas on the V100 pairs, spatial splits on the
// tight-SLO mixes), so it plans with several and keeps the best plan:
//  * the seed policies of TesseraRules.seed_policies (default sbp, greedy,
//    gpulet, gpulet-noint, igniter, las; and inss when PolicyOptions
//    carries its actor), each under its own family's planning rules;
//  * gpulet's heuristic (GpuletPlacer, with the configured interference
//    model and gpulet's check) on fixed partition layouts of the cluster,
//    simplest first (LayoutMultisets::Simplest; every layout when there
//    are few), in gpulet's order of the models and its reverse, at most
//    TesseraRules.layout_budget runs.
// Its gpulet planning (the layout search and the gpulet seed) charges a
// co-located gpulet max(headroom, interference) rather than their product
// (TesseraRules.interference_within_headroom).
// Every candidate is feasible by the rules of the planner that made it.
// Among them TesseraRules.objective picks: MAX_THROUGHPUT, the plan with
// the most room for every rate to grow (Cost.margin, by the shared check
// PlanCheck), then the least GPU share in use; FEWEST_GPUS, the fewest
// GPUs, then the most room, then the least share; ties go to the plan
// that moves the fewest gpulets of the plan in force (AssignGpuletIds),
// then to the earlier candidate. Room is not measured on large clusters.
// A plan in force that Tessera made and that still passes PlanCheck at
// today's rates is kept (TesseraRules.keep_plan_in_force): under
// MAX_THROUGHPUT unless the best candidate has more than keep_tolerance
// more room, under FEWEST_GPUS unless a candidate needs fewer GPUs.
// Before they are compared, every new plan's new gpulets grow into the
// idle share of the GPUs it uses (TesseraRules.fill_used_gpus, ShareFill).
// A pure function of the snapshot: the search is bounded by counts, not
// by a clock. On more than TesseraRules.large_cluster_gpus GPUs it plans
// with the seeds of large_cluster_seeds alone (default greedy, gpulet,
// gpulet-noint), which take a fraction of a second on 1,000 GPUs.
class TesseraPolicy : public SchedulingPolicy {
 public:
  // NOT_FOUND for an unknown seed; the error of a seed that cannot be
  // built from `options` (gpulet without an interference model);
  // INVALID_ARGUMENT without an interference model while layout_budget > 0.
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);
  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  std::string name() const override { return "tessera"; }

  // What a plan costs under the objective; public for tests.
  struct Cost {
    int gpus = 0;      // devices with at least one gpulet
    double share = 0;  // percent, summed over gpulets
    int moved = 0;     // gpulets new against the plan in force
    // How far every rate may grow before the plan breaks the shared check
    // (PlanCheck::ScaleMargin, up to kMarginMaxScale); 0: not checked, or
    // the check cannot confirm the plan (another family's latency model).
    double margin = 0;
  };
  static constexpr double kMarginMaxScale = 4;
  static constexpr int kMarginSteps = 7;
  static Cost CostOf(const Plan& plan, const Plan& current);
  // Whether `a` is strictly better than `b` under `rules`' objective.
  static bool Better(const TesseraRules& rules, const Cost& a, const Cost& b);

 private:
  // Under FEWEST_GPUS with fewest_gpus_min_room > 1: 1 when `a` holds more
  // of the floor than `b` (beyond the margin tolerance), -1 when less, 0
  // when as much or without a floor.
  static int FloorOrder(const TesseraRules& rules, const Cost& a,
                        const Cost& b);
  struct Candidate {
    Plan plan;
    std::string source;
    Cost cost;
  };
  TesseraPolicy(PolicyOptions options,
                std::vector<std::unique_ptr<SchedulingPolicy>> seeds,
                std::vector<std::unique_ptr<SchedulingPolicy>> large)
      : options_(std::move(options)),
        seeds_(std::move(seeds)),
        large_cluster_seeds_(std::move(large)) {}

  using Inputs = absl::StatusOr<std::unique_ptr<PolicyInputs>>;

  // The plan in force (if Tessera made it and keep_plan_in_force), re-solved
  // for today's rates, when it passes PlanCheck.
  std::optional<Candidate> KeptPlan(const ClusterSnapshot& snapshot,
                                    const Inputs& inputs) const;
  // The plan in force with the gpulets that miss today's rates times
  // `rate_scale` re-placed (PlanRepair), when repair_plan_in_force, it may
  // be kept, and the repair passes the shared check; filled and its
  // margin measured (Measure).
  std::optional<Candidate> RepairedPlan(const ClusterSnapshot& snapshot,
                                        const Inputs& inputs,
                                        double rate_scale) const;
  // The room the repair is made for: the best candidate's (today's rates
  // when there is none; under FEWEST_GPUS the room floor).
  double RepairTarget(std::vector<Candidate>& candidates) const;
  // gpulet's heuristic as the layout search and the repair run it.
  GpuletPlacer Placer() const;
  // Whether `current` is a plan KeptPlan may keep (Tessera's, not empty,
  // keep_plan_in_force).
  bool MayKeep(const Plan& current) const;
  // The shared check over `inputs` with Tessera's interference charge.
  PlanCheck SharedCheck(const PolicyInputs& inputs) const;
  // Whether `kept` (the plan in force, or a new plan that moves fewer
  // gpulets) stays against the best new plan: under FEWEST_GPUS while it
  // needs no more GPUs, under MAX_THROUGHPUT while its margin is within
  // keep_tolerance of the best plan's.
  bool Keeps(const Candidate& kept, const Candidate& best) const;
  // Under FEWEST_GPUS with fewest_gpus_release_room: the plan in force is
  // kept against a best plan on fewer GPUs whose room is below that floor,
  // while the plan in force has at least its room.
  bool HoldsItsGpus(const Candidate& kept, const Candidate& best) const;
  // The best of `candidates` (not empty) under the objective.
  Candidate& BestOf(std::vector<Candidate>& candidates) const;
  // With prefer_fewest_moves, the candidate that Keeps against `best`
  // and starts the fewest new gpulets (Better among equals); else `best`.
  Candidate& FewestMoves(std::vector<Candidate>& candidates,
                         Candidate& best) const;
  // Candidate `c`'s room (PlanCheck::ScaleMargin), its new gpulets first
  // grown into the idle share of the GPUs it uses with fill_used_gpus
  // (ShareFill; then its cost is measured again).
  void Measure(const ClusterSnapshot& snapshot, const PlanCheck& check,
               const PolicyInputs& inputs, Candidate* c) const;
  // `chosen` as Tessera's plan, its reason naming where it came from.
  Plan Finish(Candidate chosen, size_t feasible) const;
  // gpulet's heuristic on the fixed layouts; the best feasible one, if any.
  absl::StatusOr<std::vector<Candidate>> LayoutCandidates(
      const ClusterSnapshot& snapshot, const Inputs& inputs) const;

  PolicyOptions options_;
  std::vector<std::unique_ptr<SchedulingPolicy>> seeds_;
  std::vector<std::unique_ptr<SchedulingPolicy>> large_cluster_seeds_;
};

}  // namespace tessera
