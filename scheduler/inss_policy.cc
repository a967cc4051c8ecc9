#include "scheduler/inss_policy.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "scheduler/inss_batching.h"
#include "scheduler/inss_environment.h"
#include "scheduler/inss_provisioning.h"

namespace tessera {
namespace {

// The provisioning of the plan in force when it is an inss plan that
// places every slot with traffic on the snapshot's devices; nullopt
// otherwise. Batch sizes go to `batches`.
std::optional<InssProvisioning> CurrentProvisioning(
    const ClusterSnapshot& snapshot, const InssCluster& cluster,
    std::vector<int>* batches) {
  const Plan& plan = snapshot.current_plan;
  const int n = static_cast<int>(cluster.slots().size());
  InssProvisioning p;
  p.gpu.assign(n, -1);
  p.share_percent.assign(n, 0);
  batches->assign(n, 0);
  if (plan.policy() != "inss") return std::nullopt;
  std::map<std::string, int> slot_of;
  for (int i = 0; i < n; ++i) slot_of[cluster.slots()[i].name] = i;
  for (const DevicePlan& d : plan.devices()) {
    int gpu = -1;
    for (int g = 0; g < cluster.gpus(); ++g) {
      if (cluster.devices()[g]->backend_id == d.backend_id() &&
          cluster.devices()[g]->device_id == d.device_id()) {
        gpu = g;
      }
    }
    if (gpu < 0) return std::nullopt;
    for (const GpuletPlan& g : d.gpulets()) {
      for (const ModelAssignment& a : g.models()) {
        auto it = slot_of.find(a.model());
        if (it == slot_of.end() || p.gpu[it->second] >= 0) return std::nullopt;
        p.gpu[it->second] = gpu;
        p.share_percent[it->second] = g.share_percent();
        (*batches)[it->second] = a.batch_size();
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    if (cluster.rates_rps()[i] > 0 && p.gpu[i] < 0) return std::nullopt;
  }
  return p;
}

Plan ToPlan(const InssCluster& cluster, const InssProvisioning& p,
            const InssBatchResult& bda, const std::string& reason) {
  Plan plan;
  plan.set_policy("inss");
  plan.set_reason(reason);
  const int n = static_cast<int>(cluster.slots().size());
  for (int g = 0; g < cluster.gpus(); ++g) {
    DevicePlan* device = nullptr;
    int count = 0;
    for (int i = 0; i < n; ++i) {
      if (p.gpu[i] != g || bda.batch[i] <= 0) continue;
      if (device == nullptr) {
        device = plan.add_devices();
        device->set_backend_id(cluster.devices()[g]->backend_id);
        device->set_device_id(cluster.devices()[g]->device_id);
      }
      GpuletPlan* gpulet = device->add_gpulets();
      gpulet->set_gpulet_id(absl::StrCat(cluster.devices()[g]->backend_id, "/",
                                         cluster.devices()[g]->device_id, "/g",
                                         count++));
      gpulet->set_share_percent(p.share_percent[i]);
      ModelAssignment* a = gpulet->add_models();
      a->set_model(cluster.slots()[i].name);
      a->set_batch_size(bda.batch[i]);
      a->set_duty_cycle_ms(0);
      a->set_rate_rps(cluster.rates_rps()[i]);
    }
  }
  return plan;
}

}  // namespace

InssPolicy::InssPolicy(PolicyOptions options,
                       std::shared_ptr<const InssActor> actor,
                       std::unique_ptr<SchedulingPolicy> fallback)
    : options_(std::move(options)),
      actor_(std::move(actor)),
      fallback_(std::move(fallback)) {}

absl::StatusOr<Plan> InssPolicy::Refuse(const ClusterSnapshot& snapshot,
                                        const absl::Status& why) const {
  if (fallback_ == nullptr) return why;
  auto plan = fallback_->Schedule(snapshot);
  if (!plan.ok()) return plan.status();
  plan->set_reason(absl::StrCat("inss refused (", why.message(),
                                "); planned by ", fallback_->name(), ": ",
                                plan->reason()));
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
  if (!any) {
    Plan empty;
    empty.set_policy("inss");
    empty.set_reason("no traffic");
    return empty;
  }
  // Case 1: re-batch the provisioning in force.
  std::vector<int> batches;
  const auto current = CurrentProvisioning(snapshot, *cluster, &batches);
  if (current.has_value()) {
    const InssBatchResult bda =
        InssBatching::Decide(*cluster, *current, rates, backlog, batches);
    if (bda.ok) {
      return ToPlan(*cluster, *current, bda,
                    "BDA re-batched the provisioning in force");
    }
  }
  // Case 2: the actor re-provisions.
  const InssProvisioning none = current.value_or(
      InssProvisioning{std::vector<int>(n, -1), std::vector<double>(n, 0)});
  const std::vector<float> state =
      InssEnvironment::EncodeState(*cluster, rates, backlog, none);
  auto probs = actor_->Probabilities(state);
  if (!probs.ok()) return probs.status();
  const int k = cluster->gpus();
  const int u = cluster->share_units();
  if (static_cast<int>(probs->size()) != n * (k + u)) {
    return absl::InternalError(
        absl::StrCat("the InSS actor returned ", probs->size(),
                     " probabilities, want ", n * (k + u)));
  }
  std::vector<int> gpu(n), level(n);
  std::vector<bool> active(n);
  for (int i = 0; i < n; ++i) {
    const float* g = probs->data() + i * k;
    const float* l = probs->data() + n * k + i * u;
    gpu[i] = static_cast<int>(std::max_element(g, g + k) - g);
    level[i] = static_cast<int>(std::max_element(l, l + u) - l) + 1;
    active[i] = rates[i] > 0;
  }
  InssProvisioning p =
      InssProvisioning::FromAction(*cluster, gpu, level, active);
  InssBatchResult bda = InssBatching::Decide(*cluster, p, rates, backlog, {});
  // BDA-guided repair (InssRules.bda_repair, a Tessera addition): a model
  // BDA cannot serve gets the top share level (its device is split again
  // in proportion), once per model.
  std::vector<bool> raised(n, false);
  while (options_.rules.inss().bda_repair() && !bda.ok &&
         !raised[bda.failed_slot] && level[bda.failed_slot] < u) {
    raised[bda.failed_slot] = true;
    level[bda.failed_slot] = u;
    p = InssProvisioning::FromAction(*cluster, gpu, level, active);
    bda = InssBatching::Decide(*cluster, p, rates, backlog, {});
  }
  if (!bda.ok) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "inss: model '", cluster->slots()[bda.failed_slot].name,
        "' cannot be served on the actor's provisioning: ", bda.why));
  }
  return ToPlan(*cluster, p, bda, "the actor re-provisioned; BDA batched");
}

}  // namespace tessera
