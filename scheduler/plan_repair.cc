#include "scheduler/plan_repair.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "common/status_macros.h"
#include "scheduler/plan_check.h"

namespace tessera {

absl::StatusOr<Plan> PlanRepair::Repair(const Plan& current,
                                        const std::string& policy,
                                        double rate_scale) const {
  const PlanCheck check(inputs_, interference_, within_headroom_);
  ASSIGN_OR_RETURN(std::vector<GpuLayout> layouts,
                   check.Layouts(current, rate_scale));
  Displaced displaced;
  bool broken = false;
  for (GpuLayout& layout : layouts) {
    broken = ClearBroken(&layout, &displaced) || broken;
  }
  if (!broken) {
    return absl::FailedPreconditionError("the plan in force holds");
  }
  // What still holds stays as it is: nothing merges into it.
  for (GpuLayout& layout : layouts) {
    for (GpuLayout::Slot& slot : layout.slots()) slot.pinned = !slot.free();
  }
  AddFreeRoom(&layouts);
  // The displaced rate of each model as a demand of its own, placed in
  // gpulet's order.
  std::vector<ModelDemand> rest;
  for (const auto& [demand, rate] : displaced) {
    ModelDemand d = *demand;
    d.rate_rps = rate;
    d.saturated_cache.clear();
    d.latency_cache.clear();
    d.solo_fits_cache.clear();
    rest.push_back(std::move(d));
  }
  RETURN_IF_ERROR(placer_->Partition(GpuletPlacer::PaperOrder(rest),
                                     inputs_->share_grid(), /*fixed=*/false,
                                     &layouts));
  // BuildPlan names models by their demand; the displaced copies carry
  // their model's name, so the plan's rates add up per model.
  return BuildPlan(layouts, policy, "");
}

bool PlanRepair::ClearBroken(GpuLayout* layout, Displaced* displaced) const {
  if (layout->Resolve(interference_)) return false;
  auto clear = [displaced](GpuLayout::Slot& slot) {
    for (const Slice& s : slot.slices) (*displaced)[s.demand] += s.rate_rps;
    slot.slices.clear();
    slot.schedule = GpuletSchedule{};
  };
  auto& slots = layout->slots();
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i].free() && !layout->ResolveSlot(i, interference_)) {
      clear(slots[i]);
    }
  }
  if (!layout->Resolve(interference_)) {
    for (GpuLayout::Slot& slot : slots) clear(slot);
  }
  return true;
}

void PlanRepair::AddFreeRoom(std::vector<GpuLayout>* layouts) const {
  const std::vector<double>& grid = inputs_->share_grid();
  for (GpuLayout& layout : *layouts) {
    if (!layout.used()) {  // every gpulet cleared: the GPU is whole again
      GpuLayout whole(layout.device());
      whole.set_interference_within_headroom(within_headroom_);
      layout = std::move(whole);
      continue;
    }
    double used = 0;
    for (const GpuLayout::Slot& slot : layout.slots()) {
      used += slot.share_percent;
    }
    const double left = 100 - used;
    if (std::any_of(grid.begin(), grid.end(),
                    [left](double g) { return std::fabs(g - left) < 1e-9; })) {
      layout.slots().push_back(GpuLayout::Slot{left, {}, {}});
    }
  }
  for (const DeviceSnapshot* device : inputs_->gpus()) {
    const bool in_plan = std::any_of(
        layouts->begin(), layouts->end(),
        [device](const GpuLayout& l) { return l.device() == device; });
    if (in_plan) continue;
    GpuLayout whole(device);
    whole.set_interference_within_headroom(within_headroom_);
    layouts->push_back(std::move(whole));
  }
}

}  // namespace tessera
