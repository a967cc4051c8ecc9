#pragma once

#include "absl/status/statusor.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// A policy that plans from PolicyInputs (sbp, greedy, gpulet, igniter,
// las): Schedule builds them under the policy's options;
// ScheduleWithInputs takes a caller's when they were built under the same
// shared rules (PolicyInputs::BuiltUnder), and builds its own otherwise
// (igniter and las plan under their own headroom).
class InputsPolicy : public SchedulingPolicy {
 public:
  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const final;
  absl::StatusOr<Plan> ScheduleWithInputs(
      const ClusterSnapshot& snapshot, const PolicyInputs& inputs) const final;

 protected:
  // The options the policy plans under (their shared rules build the
  // inputs).
  virtual const PolicyOptions& options() const = 0;
  // The plan from inputs built under options().
  virtual absl::StatusOr<Plan> PlanFrom(const PolicyInputs& inputs) const = 0;
};

}  // namespace tessera
