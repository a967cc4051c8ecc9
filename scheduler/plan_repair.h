#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/interference_model.h"
#include "plan.pb.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/gpulet_placer.h"

namespace tessera {

// Re-plans only what no longer fits in a plan in force: its gpulets at
// today's rates (split in the plan's proportions, as PlanCheck splits
// them), every gpulet that then misses an SLO cleared, and the rate it
// served placed again by gpulet's heuristic on the free room (the cleared
// partitions, unallocated share, unused GPUs; nothing is merged into a
// gpulet that stays). The gpulets that still hold keep their partitions
// and models, so a re-plan after a rate change
// starts new gpulets only for what moved. Pure; the caller checks the
// result (PlanCheck) like any candidate.
class PlanRepair {
 public:
  PlanRepair(const PolicyInputs* inputs, const InterferenceModel* interference,
             const GpuletPlacer* placer, bool interference_within_headroom)
      : inputs_(inputs),
        interference_(interference),
        placer_(placer),
        within_headroom_(interference_within_headroom) {}

  // The repaired plan, named `policy`, for today's rates times
  // `rate_scale` (repaired for room to grow). FAILED_PRECONDITION when
  // `current` cannot be laid out on today's demands (a model gone or new,
  // a device gone) or already holds those rates; RESOURCE_EXHAUSTED when
  // the displaced rate does not fit.
  absl::StatusOr<Plan> Repair(const Plan& current, const std::string& policy,
                              double rate_scale = 1) const;

 private:
  using Displaced = std::map<const ModelDemand*, double>;
  // Clears the gpulets of `layout` that miss an SLO beside the others
  // (all of them if the rest still does not hold), adding their rate to
  // `displaced`. False when the layout held as it was.
  bool ClearBroken(GpuLayout* layout, Displaced* displaced) const;
  // Adds a free partition for a GPU's unallocated share (when the grid
  // has its size) and a whole free layout for every unused GPU.
  void AddFreeRoom(std::vector<GpuLayout>* layouts) const;

  const PolicyInputs* inputs_;
  const InterferenceModel* interference_;
  const GpuletPlacer* placer_;
  bool within_headroom_;
};

}  // namespace tessera
