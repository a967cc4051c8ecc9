#pragma once

#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/interference_model.h"
#include "policy_rules.pb.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/model_demand.h"

namespace tessera {

// gpulet's Algorithm 1 (ELASTICPARTITIONING, Choi et al., ATC'22) over a
// set of GPU layouts: the placement heuristic shared by the "gpulet",
// "gpulet-noint" and "ideal-layout" policies. Stateless between calls.
//
// For each model (in the caller's order) while rate remains: p_eff = the
// knee of the saturated-throughput curve (MaxEfficientPartition); if the
// remaining rate exceeds what a saturated p_eff gpulet serves, place a
// saturated gpulet of size p_eff, else the residue on p_req = the smallest
// partition <= p_eff that serves it (p_eff by GpuletRules.knee_rule; with
// ARTIFACT_THEN_PER_SHARE a failed pass is redone with the per-share
// knee on the original layouts). A residue at or below
// GpuletRules.residue_slack_rps gets no gpulet of its own once the model
// has one (the artifact's TRP_SLACK). Placement tries a temporal merge
// into an allocated gpulet that is not pinned (at most 3 models each, as
// the artifact; the fullest candidates first, GpuletRules.merge_attempts
// of them), then the best-fitting free slot (the smallest large enough),
// splitting a whole GPU into p and 100 - p unless the layouts are fixed.
//
// With an interference model, a placement is checked by
// GpuletRules.interference_check:
//  * PAPER (Algorithm 1 line 20): the newcomer's gpulet is solved with its
//    latencies inflated by the neighbours at their current batches; the
//    residents keep their schedules.
//  * ARTIFACT (casys-kaist/glet): the whole GPU is re-solved; a resident
//    that breaks keeps the largest rate it sustains if that is >=
//    artifact_min_rate_fraction of its rate, and the shortfall is placed
//    elsewhere afterwards (a model is shrunk this way at most once).
//  * STRICT: the whole GPU is re-solved and the placement undone if any
//    gpulet breaks.
// Under every check a saturated newcomer that is too slow beside its
// neighbour serves the largest rate it sustains there (>= 25 % of its
// solo rate) and the rest of its rate goes on.
class GpuletPlacer {
 public:
  GpuletPlacer(const InterferenceModel* interference, const GpuletRules& rules)
      : interference_(interference), rules_(rules) {}

  // Places every model of `order` on `layouts` (modified). `fixed`: the
  // layouts' partitions are final (no split of a whole GPU). OK, or
  // RESOURCE_EXHAUSTED naming the first model that could not be placed.
  absl::Status Partition(const std::vector<const ModelDemand*>& order,
                         const std::vector<double>& grid, bool fixed,
                         std::vector<GpuLayout>* layouts) const;

  // The paper's order: ascending rate x SLO (pitfall 4 of the digest).
  static std::vector<const ModelDemand*> PaperOrder(
      const std::vector<ModelDemand>& demands);

  // The knee of the saturated-throughput curve: among neighbouring sizes
  // of `grid` below the whole device (on the default grid the artifact's
  // pairs (20,40), (40,50), (50,60), (60,80)), the upper end of the pair
  // with the largest throughput gain per percent, ignoring gains under
  // 5 %; the smallest feasible size if none qualifies (`rule` ARTIFACT).
  // PER_SHARE: the size of `grid` with the largest saturated throughput per
  // percent, the whole device included (ties: the smaller).
  static double MaxEfficientPartition(const ModelDemand& m,
                                      const std::vector<double>& grid,
                                      GpuletKneeRule rule);

 private:
  // A model's rate left to place after a resident was shrunk.
  using Shortfalls = std::map<const ModelDemand*, double>;
  struct Context {
    const std::vector<double>* grid;
    bool fixed;
    // ARTIFACT or PER_SHARE: this pass's p_eff rule.
    GpuletKneeRule knee;
    std::vector<GpuLayout>* layouts;
    Shortfalls shortfalls;
    // Saturated gpulets may be sized for the router's rotation over them
    // (RotationSpacing); *rotated is set once one was.
    bool rotation = false;
    bool* rotated = nullptr;
    // Models already shrunk once (ARTIFACT).
    std::map<const ModelDemand*, bool> shrunk;
  };

  // Partition with or without saturated gpulets sized for the rotation.
  absl::Status PartitionRotating(bool rotation,
                                 const std::vector<const ModelDemand*>& order,
                                 const std::vector<double>& grid, bool fixed,
                                 std::vector<GpuLayout>* layouts,
                                 bool* rotated) const;
  // One pass of Algorithm 1 over `order` with p_eff by `knee`.
  absl::Status PartitionWith(GpuletKneeRule knee, bool rotation,
                             const std::vector<const ModelDemand*>& order,
                             const std::vector<double>& grid, bool fixed,
                             std::vector<GpuLayout>* layouts,
                             bool* rotated) const;
  // Whether every slice planned with an arrival spacing k >= 2 has at
  // least k gpulets of its model at its very rate in `layouts` (the
  // router then keeps each k picks apart).
  static bool RotationHolds(const std::vector<GpuLayout>& layouts);
  // GpuletRules.one_gpulet_when_smaller: true, with `share` set, when one
  // gpulet serves `rate` of `m` with less share than saturated p_eff
  // gpulets plus a residue.
  bool OneGpuletIsSmaller(const ModelDemand& m, double rate, double p_eff,
                          const std::vector<double>& grid, double* share) const;
  // Tessera's (SharedRules.round_robin_arrivals and lone_batch_queue):
  // true, with `count`, `per_gpulet` and `share` set, when `rate` of `m`
  // split evenly over count >= 2 gpulets of p_eff or of whole GPUs, each
  // dealt every count-th request (Slice.arrival_spacing), fits and takes
  // less share than the paper's split (saturated p_eff gpulets, at their
  // own rotation's spacing, and the residue's smallest partition); the
  // split with the least share wins.
  static bool EqualSplitIsSmaller(const ModelDemand& m, double rate,
                                  double p_eff, const std::vector<double>& grid,
                                  int* count, double* per_gpulet,
                                  double* share);
  // Places `rate` of `m` (saturated gpulets, then a residue).
  absl::Status PlaceRate(const ModelDemand& m, double rate, Context* ctx) const;
  // Places one slice; `placed_rate` receives the rate actually placed.
  bool Place(Slice slice, double want, bool saturated, double remaining,
             Context* ctx, double* placed_rate) const;
  // GpuletRules.leftover_fill: a saturated gpulet of m on the largest free
  // gpulet smaller than `want` that serves any rate.
  bool PlaceInLeftover(const ModelDemand& m, double want, double remaining,
                       Context* ctx, double* placed_rate) const;
  bool TryMerge(const Slice& slice, Context* ctx) const;
  // Checks slot `slot` of `trial` after the newcomer went there, as
  // interference_check says; may shrink residents (ARTIFACT), recording
  // their shortfalls in `shortfalls`.
  bool Check(GpuLayout* trial, size_t slot, const Context& ctx,
             Shortfalls* shortfalls) const;
  bool CheckArtifact(GpuLayout* trial, size_t slot, const Context& ctx,
                     Shortfalls* shortfalls) const;

  const InterferenceModel* interference_;
  GpuletRules rules_;
};

}  // namespace tessera
