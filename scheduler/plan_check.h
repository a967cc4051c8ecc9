#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/interference_model.h"
#include "plan.pb.h"
#include "scheduler/gpu_layout.h"

namespace tessera {

// The shared feasibility check of a plan against the demands of a
// snapshot, under the shared time-sharing solver's rules: every model with
// traffic is served; a model's rate (with the rules' headroom, as in
// `inputs`) is split over its gpulets in the plan's proportions; every
// gpulet, re-solved with SolveTimeShare at its share with its latencies
// inflated by its neighbours on the GPU (`interference`; null: solo),
// keeps every SLO of its round. Returns the re-solved layouts (their
// batches and duty cycles for today's rates), or FAILED_PRECONDITION
// naming what breaks. Gpulets of another scheduler than BATCHES, devices
// the snapshot lacks and models it does not serve fail the check.
class PlanCheck {
 public:
  PlanCheck(const PolicyInputs* inputs, const InterferenceModel* interference,
            bool interference_within_headroom)
      : inputs_(inputs),
        interference_(interference),
        within_headroom_(interference_within_headroom) {}

  // `rate_scale`: every model's rate multiplied by it (how far the plan
  // stretches).
  absl::StatusOr<std::vector<GpuLayout>> Check(const Plan& plan,
                                               double rate_scale = 1) const;

  // The plan's GPUs with today's rates (times `rate_scale`) split over
  // their gpulets as Check splits them, not yet solved; the same errors
  // as Check but for SLOs.
  absl::StatusOr<std::vector<GpuLayout>> Layouts(const Plan& plan,
                                                 double rate_scale = 1) const;

  // The plan re-batched for every rate times `rate_scale`: the same
  // gpulets, shares and rate proportions, with Check's batches and duty
  // cycles (BuildPlan of its layouts; policy and reason kept). What the
  // frontend serves when a policy keeps a plan as rates change.
  absl::StatusOr<Plan> Rebatch(const Plan& plan, double rate_scale = 1) const;

  // The largest s in [1, max_scale] (to within (max_scale - 1) / 2^steps)
  // for which Check(plan, s) passes; 0 if it fails at s = 1.
  double ScaleMargin(const Plan& plan, double max_scale, int steps) const;

 private:
  const PolicyInputs* inputs_;
  const InterferenceModel* interference_;
  bool within_headroom_;
};

}  // namespace tessera
