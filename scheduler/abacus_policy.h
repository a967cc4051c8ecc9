#pragma once

// Abacus's placement (SC'21): 2 to 4 services co-located per device at
// 100 % (one partition, no MPS split), each request forwarded as one query
// with no frontend batching; the backend's node-local controller orders
// and groups the queries' operators (GpuletPlan.scheduler). Registered as
// "abacus" (the headroom controller) and as "abacus-fcfs", "abacus-sjf",
// "abacus-edf" (the paper's baselines: the same placement, whole queries
// one at a time in the backend).

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

class AbacusPolicy : public SchedulingPolicy {
 public:
  AbacusPolicy(std::string name, GpuletScheduler scheduler)
      : name_(std::move(name)), scheduler_(scheduler) {}

  // Every model must be segmentable (segment_count > 0). Models are taken
  // in name order and spread evenly over the first devices in snapshot
  // order: in pairs while there are devices for them (the paper's main
  // setting; an odd one out alone), else up to four per device; beyond
  // four per device the snapshot is RESOURCE_EXHAUSTED.
  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  std::string name() const override { return name_; }

  static constexpr int kMaxServicesPerDevice = 4;

 private:
  std::string name_;
  GpuletScheduler scheduler_;
};

}  // namespace tessera
