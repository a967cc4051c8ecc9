#include "scheduler/bda_placement_policy.h"

#include <cmath>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/inss_batching.h"
#include "scheduler/inss_placement_search.h"
#include "scheduler/inss_plan.h"
#include "scheduler/policy_registry.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<SchedulingPolicy>>
BdaPlacementPolicy::CreateRoundRobin(const PolicyOptions& options) {
  return std::unique_ptr<SchedulingPolicy>(new BdaPlacementPolicy(
      "inss-rr", Placement::kRoundRobin, options, nullptr));
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>>
BdaPlacementPolicy::CreateGpulet(const PolicyOptions& options) {
  ASSIGN_OR_RETURN(auto gpulet, PolicyRegistry::Create("gpulet", options));
  return std::unique_ptr<SchedulingPolicy>(new BdaPlacementPolicy(
      "bda-gpulet", Placement::kGpulet, options, std::move(gpulet)));
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>>
BdaPlacementPolicy::CreateSearch(const PolicyOptions& options) {
  return std::unique_ptr<SchedulingPolicy>(new BdaPlacementPolicy(
      "bda-search", Placement::kSearch, options, nullptr));
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>>
BdaPlacementPolicy::CreateRandomBest(const PolicyOptions& options) {
  return std::unique_ptr<SchedulingPolicy>(new BdaPlacementPolicy(
      "bda-random", Placement::kRandomBest, options, nullptr));
}

double BdaPlacementPolicy::BdaHeadroom(const InssCluster& cluster,
                                       const InssProvisioning& p,
                                       const std::vector<double>& rates,
                                       double cap) {
  int evaluations = 0;
  return InssPlacementSearch::Room(cluster, p, rates, cap, /*at_least=*/1,
                                   &evaluations);
}

absl::StatusOr<InssProvisioning> BdaPlacementPolicy::BestRandom(
    const InssCluster& cluster) const {
  const int n = static_cast<int>(cluster.slots().size());
  std::vector<bool> active(n);
  for (int i = 0; i < n; ++i) active[i] = cluster.rates_rps()[i] > 0;
  std::mt19937_64 rng(kRandomSeed);
  std::uniform_int_distribution<int> device(0, cluster.gpus() - 1);
  std::uniform_int_distribution<int> level(1, cluster.share_units());
  double best_headroom = 0;
  InssProvisioning best;
  for (int draw = 0; draw < kRandomDraws; ++draw) {
    std::vector<int> gpu(n), lv(n);
    for (int i = 0; i < n; ++i) {
      gpu[i] = device(rng);
      lv[i] = level(rng);
    }
    InssProvisioning p = InssProvisioning::FromAction(cluster, gpu, lv, active);
    const double headroom =
        BdaHeadroom(cluster, p, cluster.rates_rps(), /*cap=*/64);
    if (headroom > best_headroom) {
      best_headroom = headroom;
      best = std::move(p);
    }
  }
  if (best_headroom <= 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name_, ": BDA batches none of ", kRandomDraws,
                     " random placements at these rates"));
  }
  return best;
}

absl::StatusOr<InssProvisioning> BdaPlacementPolicy::Place(
    const ClusterSnapshot& snapshot, const InssCluster& cluster) const {
  const int n = static_cast<int>(cluster.slots().size());
  const int k = cluster.gpus();
  std::vector<bool> active(n);
  for (int i = 0; i < n; ++i) active[i] = cluster.rates_rps()[i] > 0;
  if (placement_ == Placement::kRoundRobin) {
    std::vector<int> gpu(n, 0), level(n, cluster.share_units());
    int next = 0;
    for (int i = 0; i < n; ++i) {
      if (active[i]) gpu[i] = next++ % k;
    }
    return InssProvisioning::FromAction(cluster, gpu, level, active);
  }
  if (placement_ == Placement::kRandomBest) return BestRandom(cluster);
  if (placement_ == Placement::kSearch) {
    InssSearchOptions search;
    search.random_draws = kSearchDraws;
    search.seed = kRandomSeed;
    InssPlacementSearch::Result r =
        InssPlacementSearch::Search(cluster, cluster.rates_rps(), search);
    if (r.room < 1) {
      return absl::ResourceExhaustedError(absl::StrCat(
          name_,
          ": BDA cannot batch these rates on the best placement found "
          "(it serves ",
          r.room, "x of them)"));
    }
    return std::move(r.provisioning);
  }
  ASSIGN_OR_RETURN(Plan plan, gpulet_->Schedule(snapshot));
  InssProvisioning p;
  p.gpu.assign(n, -1);
  p.share_percent.assign(n, 0);
  std::map<std::string, int> slot_of;
  for (int i = 0; i < n; ++i) {
    if (active[i]) slot_of[cluster.slots()[i].name] = i;
  }
  std::vector<double> best_rate(n, -1);
  for (const DevicePlan& d : plan.devices()) {
    int g = -1;
    for (int h = 0; h < k; ++h) {
      if (cluster.devices()[h].backend_id == d.backend_id() &&
          cluster.devices()[h].device_id == d.device_id()) {
        g = h;
      }
    }
    if (g < 0) continue;
    for (const GpuletPlan& gp : d.gpulets()) {
      for (const ModelAssignment& a : gp.models()) {
        auto it = slot_of.find(a.model());
        if (it == slot_of.end() || a.rate_rps() <= best_rate[it->second]) {
          continue;
        }
        best_rate[it->second] = a.rate_rps();
        p.gpu[it->second] = g;
        p.share_percent[it->second] = gp.share_percent();
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    if (active[i] && p.gpu[i] < 0) {
      return absl::ResourceExhaustedError(
          absl::StrCat(name_, ": gpulet placed no gpulet for model '",
                       cluster.slots()[i].name, "': ", plan.reason()));
    }
  }
  return p;
}

absl::StatusOr<Plan> BdaPlacementPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  if (snapshot.devices.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name_, ": the cluster has no devices"));
  }
  ASSIGN_OR_RETURN(
      InssCluster cluster,
      InssCluster::FromSnapshot(snapshot, options_,
                                InssCluster::CoveringInfo(snapshot)));
  const int n = static_cast<int>(cluster.slots().size());
  const std::vector<double>& rates = cluster.rates_rps();
  bool any = false;
  for (double r : rates) any = any || r > 0;
  if (!any) return InssPlan::Empty(name_);
  const std::vector<double> backlog(n, 0);
  std::vector<int> batches;
  const auto current = InssPlan::Current(snapshot, cluster, name_, &batches);
  if (current.has_value()) {
    const InssBatchResult bda =
        InssBatching::Decide(cluster, *current, rates, backlog, batches);
    if (bda.ok) {
      return InssPlan::Build(cluster, *current, bda, name_,
                             "BDA re-batched the provisioning in force");
    }
  }
  ASSIGN_OR_RETURN(InssProvisioning p, Place(snapshot, cluster));
  const InssBatchResult bda =
      InssBatching::Decide(cluster, p, rates, backlog, {});
  if (!bda.ok) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name_, ": model '", cluster.slots()[bda.failed_slot].name,
                     "' cannot be served on the placement: ", bda.why));
  }
  return InssPlan::Build(cluster, p, bda, name_,
                         placement_ == Placement::kRoundRobin
                             ? "round-robin placement; BDA batched"
                         : placement_ == Placement::kGpulet
                             ? "gpulet's placement; BDA batched"
                         : placement_ == Placement::kSearch
                             ? "the placement a local search found; BDA batched"
                             : absl::StrCat("the best of ", kRandomDraws,
                                            " random placements; BDA batched"));
}

REGISTER_SCHEDULING_POLICY("inss-rr", BdaPlacementPolicy::CreateRoundRobin);
REGISTER_SCHEDULING_POLICY("bda-gpulet", BdaPlacementPolicy::CreateGpulet);
REGISTER_SCHEDULING_POLICY("bda-random", BdaPlacementPolicy::CreateRandomBest);
REGISTER_SCHEDULING_POLICY("bda-search", BdaPlacementPolicy::CreateSearch);

}  // namespace tessera
