#include "scheduler/inss_policy.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/bda_placement_policy.h"
#include "scheduler/inss_batching.h"
#include "scheduler/inss_environment.h"
#include "scheduler/inss_plan.h"
#include "scheduler/inss_provisioning.h"

namespace tessera {
namespace {

// The seed of InssRules.actor_samples' draws.
constexpr uint64_t kSampleSeed = 20261127;

// One option of a head with probabilities `p[0..n)`, each taken to
// `power`.
int Draw(const float* p, int n, double power, std::mt19937_64* rng) {
  std::vector<double> w(p, p + n);
  if (power != 1) {
    for (double& x : w) x = std::pow(x, power);
  }
  return std::discrete_distribution<int>(w.begin(), w.end())(*rng);
}

}  // namespace

InssPolicy::InssPolicy(std::string name, PolicyOptions options,
                       std::shared_ptr<const InssActor> actor,
                       std::unique_ptr<SchedulingPolicy> fallback)
    : name_(std::move(name)),
      options_(std::move(options)),
      actor_(std::move(actor)),
      fallback_(std::move(fallback)) {}

absl::StatusOr<Plan> InssPolicy::Refuse(const ClusterSnapshot& snapshot,
                                        const absl::Status& why) const {
  if (fallback_ == nullptr) return why;
  ASSIGN_OR_RETURN(auto plan, fallback_->Schedule(snapshot));
  plan.set_reason(absl::StrCat(name_, " refused (", why.message(),
                               "); planned by ", fallback_->name(), ": ",
                               plan.reason()));
  return plan;
}

absl::StatusOr<Plan> InssPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  auto cluster = InssCluster::FromSnapshot(snapshot, options_, actor_->info());
  if (!cluster.ok()) {
    if (absl::IsFailedPrecondition(cluster.status())) {
      return Refuse(snapshot, cluster.status());
    }
    return cluster.status();
  }
  const int n = static_cast<int>(cluster->slots().size());
  const std::vector<double>& rates = cluster->rates_rps();
  // Snapshots carry no queue lengths: plan for an empty backlog.
  const std::vector<double> backlog(n, 0);
  bool any = false;
  for (double r : rates) any = any || r > 0;
  if (!any) return InssPlan::Empty(name_);
  // Case 1: re-batch the provisioning in force.
  std::vector<int> batches;
  const auto current = InssPlan::Current(snapshot, *cluster, name_, &batches);
  if (current.has_value()) {
    const InssBatchResult bda =
        InssBatching::Decide(*cluster, *current, rates, backlog, batches);
    if (bda.ok) {
      return InssPlan::Build(*cluster, *current, bda, name_,
                             "BDA re-batched the provisioning in force");
    }
  }
  // Case 2: the actor re-provisions.
  const InssProvisioning none = current.value_or(
      InssProvisioning{std::vector<int>(n, -1), std::vector<double>(n, 0)});
  const std::vector<float> state =
      InssEnvironment::EncodeState(*cluster, rates, backlog, none);
  ASSIGN_OR_RETURN(auto probs, actor_->Probabilities(state));
  // The device heads have one option per device the actor covers; those
  // the cluster lacks are never picked.
  const int heads = cluster->max_gpus();
  const int k = cluster->gpus();
  const int u = cluster->share_units();
  if (static_cast<int>(probs.size()) != n * (heads + u)) {
    return absl::InternalError(
        absl::StrCat("the InSS actor returned ", probs.size(),
                     " probabilities, want ", n * (heads + u)));
  }
  std::vector<int> gpu(n), level(n);
  std::vector<bool> active(n);
  for (int i = 0; i < n; ++i) {
    const float* g = probs.data() + i * heads;
    const float* l = probs.data() + n * heads + i * u;
    gpu[i] = static_cast<int>(std::max_element(g, g + k) - g);
    level[i] = static_cast<int>(std::max_element(l, l + u) - l) + 1;
    active[i] = rates[i] > 0;
  }
  InssBatchResult bda;
  const InssProvisioning p =
      options_.rules.inss().actor_samples() > 0
          ? BestSampled(*cluster, probs, gpu, level, active, &bda)
          : Provision(*cluster, gpu, level, active, &bda);
  if (!bda.ok) {
    return absl::ResourceExhaustedError(absl::StrCat(
        name_, ": model '", cluster->slots()[bda.failed_slot].name,
        "' cannot be served on the actor's provisioning: ", bda.why));
  }
  const int samples = options_.rules.inss().actor_samples();
  return InssPlan::Build(
      *cluster, p, bda, name_,
      samples > 0 ? absl::StrCat("the actor re-provisioned (the most BDA "
                                 "room of its argmax and ",
                                 samples, " sampled actions); BDA batched")
                  : "the actor re-provisioned; BDA batched");
}

InssProvisioning InssPolicy::Provision(const InssCluster& cluster,
                                       const std::vector<int>& gpu,
                                       std::vector<int> level,
                                       const std::vector<bool>& active,
                                       InssBatchResult* bda) const {
  const int n = static_cast<int>(level.size());
  const std::vector<double>& rates = cluster.rates_rps();
  const std::vector<double> backlog(n, 0);
  InssProvisioning p =
      InssProvisioning::FromAction(cluster, gpu, level, active);
  *bda = InssBatching::Decide(cluster, p, rates, backlog, {});
  // BDA-guided repair (InssRules.bda_repair, a Tessera addition): a model
  // BDA cannot serve gets the top share level (its device is split again
  // in proportion), once per model.
  std::vector<bool> raised(n, false);
  const int top = cluster.share_units();
  while (options_.rules.inss().bda_repair() && !bda->ok &&
         !raised[bda->failed_slot] && level[bda->failed_slot] < top) {
    raised[bda->failed_slot] = true;
    level[bda->failed_slot] = top;
    p = InssProvisioning::FromAction(cluster, gpu, level, active);
    *bda = InssBatching::Decide(cluster, p, rates, backlog, {});
  }
  return p;
}

InssProvisioning InssPolicy::BestSampled(const InssCluster& cluster,
                                         const std::vector<float>& probs,
                                         const std::vector<int>& gpu,
                                         const std::vector<int>& level,
                                         const std::vector<bool>& active,
                                         InssBatchResult* bda) const {
  constexpr double kMaxRoom = 64;
  const int n = static_cast<int>(gpu.size());
  const int heads = cluster.max_gpus();
  const int k = cluster.gpus();
  const int u = cluster.share_units();
  InssProvisioning best = Provision(cluster, gpu, level, active, bda);
  double best_room = bda->ok ? BdaPlacementPolicy::BdaHeadroom(
                                   cluster, best, cluster.rates_rps(), kMaxRoom)
                             : 0;
  std::mt19937_64 rng(kSampleSeed);
  const double power = 1 / options_.rules.inss().actor_sample_temperature();
  std::vector<int> g(n), l(n);
  for (int s = 0; s < options_.rules.inss().actor_samples(); ++s) {
    for (int i = 0; i < n; ++i) {
      const float* pg = probs.data() + i * heads;
      const float* pl = probs.data() + n * heads + i * u;
      g[i] = Draw(pg, k, power, &rng);
      l[i] = Draw(pl, u, power, &rng) + 1;
    }
    InssBatchResult trial_bda;
    InssProvisioning trial = Provision(cluster, g, l, active, &trial_bda);
    if (!trial_bda.ok) continue;
    const double room = BdaPlacementPolicy::BdaHeadroom(
        cluster, trial, cluster.rates_rps(), kMaxRoom);
    if (room > best_room) {
      best_room = room;
      best = std::move(trial);
      *bda = std::move(trial_bda);
    }
  }
  return best;
}

}  // namespace tessera
