#include "scheduler/greedy_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/policy_registry.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> GreedyPolicy::Create(
    const PolicyOptions& options) {
  return std::unique_ptr<SchedulingPolicy>(new GreedyPolicy(options));
}

absl::StatusOr<Plan> GreedyPolicy::PlanFrom(const PolicyInputs& inputs) const {
  struct Part {
    Slice slice;
    double share;
  };
  std::vector<Part> parts;
  for (const ModelDemand& m : inputs.demands()) {
    // Whole GPUs at one rate, sized for the router's rotation over them
    // (RotationSpacing: at least `spacing` of them).
    double t = 0;
    const int spacing = RotationSpacing(m, m.rate_rps, 100, &t);
    double remaining = m.rate_rps;
    // Under the rotation rules, a residue that no partition carries on its
    // own stream makes the model an even split over one whole GPU more.
    if (const int n = EvenSplitForResidue(m, t)) {
      for (int i = 0; i < n; ++i) {
        parts.push_back(
            {Slice{&m, m.rate_rps / n, std::min(n, kBatchQueueMaxSpacing)},
             100});
      }
      continue;
    }
    while (remaining > 1e-9) {
      if (t > 0 && remaining > t) {
        parts.push_back({Slice{&m, t, spacing}, 100});
        remaining -= t;
        continue;
      }
      bool placed = false;
      for (double p : inputs.share_grid()) {
        if (SoloFits(m, remaining, p)) {
          parts.push_back({Slice{&m, remaining}, p});
          placed = true;
          break;
        }
      }
      if (!placed) {
        return Unschedulable(m, "no partition meets its SLO at its rate");
      }
      remaining = 0;
    }
  }
  std::stable_sort(
      parts.begin(), parts.end(),
      [](const Part& a, const Part& b) { return a.share > b.share; });
  const auto& gpus = inputs.gpus();
  std::vector<GpuLayout> layouts;
  for (const Part& part : parts) {
    // Best fit: the GPU with one partition whose free remainder is the
    // smallest that still holds this one.
    int best = -1;
    double best_free = 1e9;
    for (size_t g = 0; g < layouts.size(); ++g) {
      auto& slots = layouts[g].slots();
      if (slots.size() != 2 || !slots[1].free()) continue;
      const double free = slots[1].share_percent;
      if (free >= part.share && free < best_free) {
        best = static_cast<int>(g);
        best_free = free;
      }
    }
    if (best < 0) {
      if (layouts.size() >= gpus.size()) {
        return Unschedulable(*part.slice.demand,
                             absl::StrCat("its partitions need more than the ",
                                          gpus.size(), " GPUs"));
      }
      layouts.emplace_back(gpus[layouts.size()]);
      best = static_cast<int>(layouts.size()) - 1;
      layouts[best].Split(part.share);
      layouts[best].slots()[0].slices = {part.slice};
    } else {
      // The partition keeps its own size; the rest of the slot is wasted.
      auto& slots = layouts[best].slots();
      slots[1].share_percent = part.share;
      slots[1].slices = {part.slice};
    }
    layouts[best].Resolve(nullptr);
  }
  return BuildPlan(layouts, "greedy", "best-fit spatial partitions");
}

REGISTER_SCHEDULING_POLICY("greedy", GreedyPolicy::Create);

}  // namespace tessera
