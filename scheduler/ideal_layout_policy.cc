#include "scheduler/ideal_layout_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/gpulet_placer.h"
#include "scheduler/layout_multisets.h"
#include "scheduler/policy_registry.h"

namespace tessera {
absl::StatusOr<std::unique_ptr<SchedulingPolicy>> IdealLayoutPolicy::Create(
    const PolicyOptions& options) {
  return std::unique_ptr<SchedulingPolicy>(new IdealLayoutPolicy(options));
}

absl::StatusOr<Plan> IdealLayoutPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  ASSIGN_OR_RETURN(std::unique_ptr<PolicyInputs> inputs,
                   PolicyInputs::FromSnapshot(snapshot, options_));
  const auto& gpus = inputs->gpus();
  const std::vector<const ModelDemand*> order =
      GpuletPlacer::PaperOrder(inputs->demands());
  if (order.empty()) return BuildPlan({}, name(), "no load");
  const std::vector<double>& grid = inputs->share_grid();
  if (grid != AllowedShares()) {
    return absl::FailedPreconditionError(
        "ideal-layout: the devices' partition grid is not the GPU grid "
        "{20, 40, 50, 60, 80, 100}");
  }
  const int n = static_cast<int>(gpus.size());
  if (LayoutMultisets::Count(n) > kMaxLayouts) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ideal-layout: ", n, " GPUs make more than ", kMaxLayouts, " layouts"));
  }
  const GpuletPlacer placer(options_.interference.get(),
                            options_.rules.gpulet());
  std::vector<GpuLayout> best;
  double best_share = 0;
  int best_gpus = 0, tried = 0, succeeded = 0;
  for (const std::vector<int>& choice : LayoutMultisets::All(n)) {
    std::vector<GpuLayout> layouts;
    for (int g = 0; g < n; ++g) {
      layouts.emplace_back(gpus[g], LayoutMultisets::GpuLayouts()[choice[g]]);
    }
    ++tried;
    if (placer.Partition(order, grid, /*fixed=*/true, &layouts).ok()) {
      ++succeeded;
      double share = 0;
      int used = 0;
      for (const GpuLayout& l : layouts) {
        used += l.used() ? 1 : 0;
        for (const auto& slot : l.slots()) {
          if (!slot.free()) share += slot.share_percent;
        }
      }
      if (best.empty() || share < best_share - 1e-9 ||
          (share < best_share + 1e-9 && used < best_gpus)) {
        best = std::move(layouts);
        best_share = share;
        best_gpus = used;
      }
    }
  }
  if (best.empty()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("ideal-layout: gpulet's heuristic places the ",
                     order.size(), " model(s) on none of the ", tried,
                     " partition layouts of ", n, " GPU(s)"));
  }
  return BuildPlan(best, name(),
                   absl::StrCat("gpulet's heuristic on the best of ", tried,
                                " fixed layouts (", succeeded, " fit): ",
                                best_share, "% on ", best_gpus, " GPU(s)"));
}

REGISTER_SCHEDULING_POLICY("ideal-layout", IdealLayoutPolicy::Create);

}  // namespace tessera
