#include "scheduler/ideal_layout_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/gpulet_placer.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

// The per-GPU layouts of the artifact's full search (percent).
const std::vector<std::vector<double>>& GpuLayouts() {
  static const std::vector<std::vector<double>> layouts = {
      {100}, {20, 80}, {40, 60}, {50, 50}};
  return layouts;
}

// Number of multisets of n GPUs over k layouts: C(n + k - 1, k - 1).
double MultisetCount(int n, int k) {
  double c = 1;
  for (int i = 1; i < k; ++i) c = c * (n + i) / i;
  return c;
}

}  // namespace

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
  const int k = static_cast<int>(GpuLayouts().size());
  if (MultisetCount(n, k) > kMaxLayouts) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ideal-layout: ", n, " GPUs make more than ", kMaxLayouts, " layouts"));
  }
  const GpuletPlacer placer(options_.interference.get(),
                            options_.rules.gpulet());
  // Layout index per GPU, non-decreasing (a multiset).
  std::vector<int> choice(n, 0);
  std::vector<GpuLayout> best;
  double best_share = 0;
  int best_gpus = 0, tried = 0, succeeded = 0;
  while (true) {
    std::vector<GpuLayout> layouts;
    for (int g = 0; g < n; ++g) {
      layouts.emplace_back(gpus[g], GpuLayouts()[choice[g]]);
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
    // Next non-decreasing sequence.
    int g = n - 1;
    while (g >= 0 && choice[g] == k - 1) --g;
    if (g < 0) break;
    ++choice[g];
    for (int h = g + 1; h < n; ++h) choice[h] = choice[g];
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
