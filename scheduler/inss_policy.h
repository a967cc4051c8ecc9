#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/inss_actor.h"
#include "scheduler/inss_batching.h"
#include "scheduler/inss_cluster.h"
#include "scheduler/inss_provisioning.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// InSS (seeds/digests/inss.md), registered as "inss" by
// scheduler/inss_policy_factory.cc with the actor PolicyOptions::inss_actor
// holds (an MlpInssActor its caller loaded). The two layers
// of Sec. 5:
//  1. when the plan in force is an inss plan that places every model with
//     traffic, BDA (scheduler/inss_batching.h) re-batches on the observed
//     rates without moving anything (Case 1: no new process);
//  2. otherwise, or when BDA fails there, the actor proposes placement and
//     shares from the state (argmax of every head: planning is
//     deterministic), InssProvisioning repairs them and BDA batches them
//     (Case 2). When BDA fails on it, the failing model's share level is
//     raised to the top (its device is split again), once per model: the
//     actor was trained on loads of 10-90 % and answers oddly outside
//     them (a Tessera addition; the paper gives the actor's action as is).
//     If BDA still fails the snapshot is unschedulable:
//     RESOURCE_EXHAUSTED naming the model and the constraint. With
//     InssRules.actor_samples (a Tessera addition) it also draws actions
//     from the actor's heads and keeps the provisioning with the most BDA
//     room (BdaPlacementPolicy::BdaHeadroom), the argmax's on ties.
// Each model runs on exactly one device ((1e): InSS has no replicas).
// "inss-ni" is the paper's ablation without the interference term: the
// same actor, BDA's t_inf without co-runners' interference.
// A snapshot beyond what the checkpoint covers (InssCluster::FromSnapshot:
// models, device count or kind, SLOs) is refused with FAILED_PRECONDITION
// naming the limit, or, with PolicyOptions::inss_fallback set, planned by
// that policy, the plan's reason saying why.
class InssPolicy : public SchedulingPolicy {
 public:
  // `name`: "inss" or "inss-ni" (options.interference null); `fallback`
  // may be null.
  InssPolicy(std::string name, PolicyOptions options,
             std::shared_ptr<const InssActor> actor,
             std::unique_ptr<SchedulingPolicy> fallback);

  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& snapshot) const override;
  std::string name() const override { return name_; }

 private:
  absl::StatusOr<Plan> Refuse(const ClusterSnapshot& snapshot,
                              const absl::Status& why) const;
  // The action's provisioning, repaired (InssRules.bda_repair) until BDA
  // batches it or no repair is left; `bda` receives BDA's answer.
  InssProvisioning Provision(const InssCluster& cluster,
                             const std::vector<int>& gpu,
                             std::vector<int> level,
                             const std::vector<bool>& active,
                             InssBatchResult* bda) const;
  // InssRules.actor_samples actions drawn from the heads `probs` (the
  // argmax `gpu`, `level` first); the provisioning BDA batches with the
  // most room. `bda` receives BDA's answer on it.
  InssProvisioning BestSampled(const InssCluster& cluster,
                               const std::vector<float>& probs,
                               const std::vector<int>& gpu,
                               const std::vector<int>& level,
                               const std::vector<bool>& active,
                               InssBatchResult* bda) const;

  std::string name_;
  PolicyOptions options_;
  std::shared_ptr<const InssActor> actor_;
  std::unique_ptr<SchedulingPolicy> fallback_;
};

}  // namespace tessera
