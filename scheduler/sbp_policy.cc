#include "scheduler/sbp_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/policy_registry.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> SbpPolicy::Create(
    const PolicyOptions& options) {
  return std::unique_ptr<SchedulingPolicy>(new SbpPolicy(options));
}

absl::StatusOr<Plan> SbpPolicy::PlanFrom(const PolicyInputs& inputs) const {
  const auto& gpus = inputs.gpus();
  std::vector<GpuLayout> layouts;
  auto new_gpu = [&]() -> GpuLayout* {
    if (layouts.size() >= gpus.size()) return nullptr;
    layouts.emplace_back(gpus[layouts.size()]);
    return &layouts.back();
  };
  struct Residue {
    Slice slice;
    double occupancy;
  };
  std::vector<Residue> residues;
  for (const ModelDemand& m : inputs.demands()) {
    // Saturated GPUs at one rate, sized for the router's rotation over
    // them (RotationSpacing: at least `spacing` of them).
    double t = 0;
    int spacing = RotationSpacing(m, m.rate_rps, 100, &t);
    double remaining = m.rate_rps;
    int whole = 0;
    // Under the rotation rules, a residue that no whole GPU carries on its
    // own stream makes the model an even split over one GPU more.
    if (const int n = EvenSplitForResidue(m, t)) {
      whole = n;
      t = m.rate_rps / n;
      spacing = std::min(n, kBatchQueueMaxSpacing);
      remaining = 0;
    } else if (t > 0) {
      for (; remaining > t; remaining -= t) ++whole;
    }
    for (int i = 0; i < whole; ++i) {
      GpuLayout* gpu = new_gpu();
      if (gpu == nullptr) {
        return Unschedulable(
            m, absl::StrCat("needs more than the ", gpus.size(), " GPUs"));
      }
      GpuLayout::Slot& slot = gpu->slots()[0];
      slot.slices = {Slice{&m, t, spacing}};
      if (!gpu->Resolve(nullptr)) {
        return Unschedulable(m, "saturated GPU infeasible");
      }
    }
    if (remaining <= 1e-9) continue;
    auto solo = SolveTimeShare({Slice{&m, remaining}}, 100, SoloLatency);
    if (!solo) {
      return Unschedulable(m, "its SLO cannot be met even on a whole GPU");
    }
    residues.push_back({Slice{&m, remaining}, solo->occupancy});
  }
  std::stable_sort(residues.begin(), residues.end(),
                   [](const Residue& a, const Residue& b) {
                     return a.occupancy > b.occupancy;
                   });
  const size_t first_shared = layouts.size();
  for (const Residue& r : residues) {
    // Best fit: the shared GPU left fullest by the merge.
    int best = -1;
    GpuletSchedule best_schedule;
    for (size_t g = first_shared; g < layouts.size(); ++g) {
      std::vector<Slice> merged = layouts[g].slots()[0].slices;
      merged.push_back(r.slice);
      auto s = SolveTimeShare(merged, 100, SoloLatency);
      if (s && (best < 0 || s->occupancy > best_schedule.occupancy)) {
        best = static_cast<int>(g);
        best_schedule = *s;
      }
    }
    if (best >= 0) {
      GpuLayout::Slot& slot = layouts[best].slots()[0];
      slot.slices.push_back(r.slice);
      slot.schedule = best_schedule;
      continue;
    }
    GpuLayout* gpu = new_gpu();
    if (gpu == nullptr) {
      return Unschedulable(*r.slice.demand, absl::StrCat("needs more than the ",
                                                         gpus.size(), " GPUs"));
    }
    gpu->slots()[0].slices = {r.slice};
    gpu->Resolve(nullptr);
  }
  return BuildPlan(layouts, "sbp", "squishy bin packing (temporal only)");
}

REGISTER_SCHEDULING_POLICY("sbp", SbpPolicy::Create);

}  // namespace tessera
