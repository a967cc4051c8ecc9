#include "scheduler/gpulet_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/policy_registry.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> GpuletPolicy::Create(
    const PolicyOptions& options) {
  if (options.interference == nullptr) {
    return absl::InvalidArgumentError(
        "policy 'gpulet' needs an interference model (or use "
        "'gpulet-noint')");
  }
  return std::unique_ptr<SchedulingPolicy>(
      new GpuletPolicy("gpulet", options.interference, options));
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> GpuletPolicy::CreateNoInt(
    const PolicyOptions& options) {
  return std::unique_ptr<SchedulingPolicy>(
      new GpuletPolicy("gpulet-noint", nullptr, options));
}

absl::StatusOr<Plan> GpuletPolicy::PlanFrom(const PolicyInputs& inputs) const {
  const std::vector<const ModelDemand*> order =
      GpuletPlacer::PaperOrder(inputs.demands());
  const auto& gpus = inputs.gpus();
  if (order.empty()) return BuildPlan({}, name_, "no load");
  // Algorithm 2 (smallest N for which Algorithm 1 succeeds) in one pass:
  // placement is best fit, so a whole GPU is opened (split) only when no
  // slot on the GPUs already in use can take the gpulet. A pass over all
  // GPUs therefore uses exactly U GPUs where U is the smallest N that
  // succeeds: with N < U, Algorithm 1 fails at the moment this pass opened
  // GPU U, and with N = U it makes the same placements.
  std::vector<GpuLayout> layouts;
  for (const DeviceSnapshot* gpu : gpus) layouts.emplace_back(gpu);
  const GpuletPlacer placer(interference_.get(), options_.rules.gpulet());
  RETURN_IF_ERROR(placer.Partition(order, inputs.share_grid(),
                                   /*fixed=*/false, &layouts));
  int used = 0;
  for (const GpuLayout& g : layouts) used += g.used() ? 1 : 0;
  return BuildPlan(layouts, name_, absl::StrCat("fits on ", used, " GPU(s)"));
}

REGISTER_SCHEDULING_POLICY("gpulet", GpuletPolicy::Create);
REGISTER_SCHEDULING_POLICY("gpulet-noint", GpuletPolicy::CreateNoInt);

}  // namespace tessera
