#pragma once

#include <vector>

#include "plan.pb.h"
#include "scheduler/plan_check.h"

namespace tessera {

// Gives the idle share of the GPUs a plan already uses to the plan's new
// gpulets. A used GPU's unallocated share costs no GPU; handed to its
// gpulets it is room for the rates to grow before a re-plan lands. Only
// gpulets that start anyway (new against the plan in force) grow, so the
// fill moves nothing more, and no share shrinks.
//  * A plan the shared check confirms: on each GPU its new gpulets take
//    grid steps, always the one grown least relative to its share so far,
//    while a step fits in 100 % (one new gpulet: the largest grid share
//    that fits). Kept if the plan's room (PlanCheck::ScaleMargin, one
//    check of the whole plan) does not drop; else the same for the GPUs
//    with one new gpulet alone, else nothing. The plan is then re-batched.
//  * A plan the check cannot confirm (another family's latency model,
//    shares off the grid: iGniter's) grows in proportion: each GPU's new
//    gpulets scaled by one factor to fill it, shares rounded down to a
//    whole percent (to the grid where the devices declare their own, a
//    cpu node's), batches as planned. Its planner's check is not re-run:
//    a larger share only shortens a gpulet's batches, the neighbours'
//    interference as the ground truth models it does not depend on it.
// Pure.
class ShareFill {
 public:
  // `grid`: the partition sizes the check knows (ascending);
  // `whole_percents`: whether a share may be any whole percent when the
  // plan is not confirmed (GPUs under MPS) or must lie on `grid` (a
  // device with its own grid); `max_scale`, `steps`: ScaleMargin's bounds.
  ShareFill(const PlanCheck* check, std::vector<double> grid,
            bool whole_percents, double max_scale, int steps)
      : check_(check),
        grid_(std::move(grid)),
        whole_percents_(whole_percents),
        max_scale_(max_scale),
        steps_(steps) {}

  struct Result {
    Plan plan;          // re-batched (PlanCheck::Rebatch) when it grew
    double margin = 0;  // the plan's room after the fill
    int raised = 0;     // gpulets grown
  };

  // `plan` with its new gpulets (NewGpulets(current, plan)) grown into the
  // idle share of their GPUs, and its room (ScaleMargin; 0 when the check
  // cannot confirm it): the plan's own room only where nothing grew.
  Result Fill(const Plan& plan, const Plan& current) const;

 private:
  // The growable gpulets of `device` raised one grid step at a time,
  // always the one grown least relative to its share so far, while a step
  // fits in 100 %.
  void GrowOnGrid(const std::vector<bool>& growable, DevicePlan* device) const;
  // The unconfirmed plan's growable gpulets on `device` scaled to fill it;
  // how many grew.
  int GrowInProportion(const std::vector<bool>& growable,
                       DevicePlan* device) const;
  // The largest grid share at most `share` (0 if none).
  double GridAtMost(double share) const;
  // The largest share an unconfirmed plan may take at most `share`: a
  // whole percent, or GridAtMost.
  double RoundDown(double share) const;
  // Per device, per gpulet: new against `current` and serving a model.
  static std::vector<std::vector<bool>> Growable(const Plan& plan,
                                                 const Plan& current);
  // How many gpulets of `before` have a larger share in `after` (the same
  // devices and gpulets).
  static int Grown(const Plan& before, const Plan& after);

  const PlanCheck* check_;
  std::vector<double> grid_;
  bool whole_percents_;
  double max_scale_;
  int steps_;
};

}  // namespace tessera
