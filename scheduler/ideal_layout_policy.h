#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// The gpulet paper's ideal ("ideal-layout"; the artifact's --full_search):
// gpulet's own heuristic (GpuletPlacer, with the configured interference
// model and GpuletRules) run on every fixed partition layout of the
// cluster: each GPU whole, 20/80, 40/60 or 50/50, GPUs taken as a
// multiset (they are identical). A layout succeeds when the heuristic
// places every model without splitting anything further; among those, the
// plan with the least share in use wins (then the fewest GPUs). It differs
// from "ideal", which searches every assignment of models to partitions.
// C(N + 3, 3) layouts for N GPUs: refused (FAILED_PRECONDITION) beyond
// kMaxLayouts. A reference for experiments, not a serving policy.
class IdealLayoutPolicy : public SchedulingPolicy {
 public:
  static constexpr int kMaxLayouts = 20000;

  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);
  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  std::string name() const override { return "ideal-layout"; }

 private:
  explicit IdealLayoutPolicy(PolicyOptions options)
      : options_(std::move(options)) {}
  PolicyOptions options_;
};

}  // namespace tessera
