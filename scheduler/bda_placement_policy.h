#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/inss_provisioning.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// InSS's batching (BDA) on a placement that is not the actor's: the
// paper's ablation "BDA-Gpulet" and the floor InSS's actor must beat.
//  * "inss-rr": model i (name order) on device i mod K, each device split
//    evenly among its models;
//  * "bda-gpulet": gpulet's placement and partition sizes (a model gpulet
//    splits over several gpulets keeps the one with the largest rate),
//    re-batched by BDA;
//  * "bda-random": the best of kRandomDraws random actions (a device and a
//    share level per model, uniform, made feasible by
//    InssProvisioning::FromAction, the seed fixed): among those BDA can
//    batch at the observed rates, the one whose rates BDA can scale the
//    furthest (bisection to 1 %). The reference InSS's actor is measured
//    against: what a search over placements finds under the same
//    batching;
//  * "bda-search": InssPlacementSearch (kSearchDraws random actions, then
//    a local search over single moves and swaps), the teacher
//    tessera_inss_train --teacher=search trains an actor to imitate.
// Like inss, a plan in force of the same policy is only re-batched while
// BDA holds it; when BDA fails on the placement the snapshot is
// RESOURCE_EXHAUSTED naming the model.
class BdaPlacementPolicy : public SchedulingPolicy {
 public:
  enum class Placement { kRoundRobin, kGpulet, kRandomBest, kSearch };
  static constexpr int kRandomDraws = 1000;
  static constexpr uint64_t kRandomSeed = 20261126;
  static constexpr int kSearchDraws = 128;

  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreateRoundRobin(
      const PolicyOptions& options);
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreateGpulet(
      const PolicyOptions& options);
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreateRandomBest(
      const PolicyOptions& options);
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreateSearch(
      const PolicyOptions& options);

  // The largest multiple (<= `cap`, 1 % precision) of `rates` BDA can
  // batch on `p`; 0 when it cannot batch the rates themselves.
  static double BdaHeadroom(const InssCluster& cluster,
                            const InssProvisioning& p,
                            const std::vector<double>& rates, double cap);

  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  std::string name() const override { return name_; }

 private:
  BdaPlacementPolicy(std::string name, Placement placement,
                     PolicyOptions options,
                     std::unique_ptr<SchedulingPolicy> gpulet)
      : name_(std::move(name)),
        placement_(placement),
        options_(std::move(options)),
        gpulet_(std::move(gpulet)) {}

  absl::StatusOr<InssProvisioning> Place(const ClusterSnapshot& snapshot,
                                         const InssCluster& cluster) const;
  absl::StatusOr<InssProvisioning> BestRandom(const InssCluster& cluster) const;

  std::string name_;
  Placement placement_;
  PolicyOptions options_;
  std::unique_ptr<SchedulingPolicy> gpulet_;  // kGpulet only
};

}  // namespace tessera
