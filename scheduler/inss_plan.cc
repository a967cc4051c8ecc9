#include "scheduler/inss_plan.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace tessera {

std::optional<InssProvisioning> InssPlan::Current(
    const ClusterSnapshot& snapshot, const InssCluster& cluster,
    const std::string& policy, std::vector<int>* batches) {
  const Plan& plan = snapshot.current_plan;
  const int n = static_cast<int>(cluster.slots().size());
  InssProvisioning p;
  p.gpu.assign(n, -1);
  p.share_percent.assign(n, 0);
  batches->assign(n, 0);
  if (plan.policy() != policy) return std::nullopt;
  std::map<std::string, int> slot_of;
  for (int i = 0; i < n; ++i) {
    if (cluster.slots()[i].latency != nullptr)
      slot_of[cluster.slots()[i].name] = i;
  }
  for (const DevicePlan& d : plan.devices()) {
    int gpu = -1;
    for (int g = 0; g < cluster.gpus(); ++g) {
      if (cluster.devices()[g].backend_id == d.backend_id() &&
          cluster.devices()[g].device_id == d.device_id()) {
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

Plan InssPlan::Build(const InssCluster& cluster, const InssProvisioning& p,
                     const InssBatchResult& bda, const std::string& policy,
                     const std::string& reason) {
  Plan plan;
  plan.set_policy(policy);
  plan.set_reason(reason);
  const int n = static_cast<int>(cluster.slots().size());
  for (int g = 0; g < cluster.gpus(); ++g) {
    DevicePlan* device = nullptr;
    int count = 0;
    for (int i = 0; i < n; ++i) {
      if (p.gpu[i] != g || bda.batch[i] <= 0) continue;
      if (device == nullptr) {
        device = plan.add_devices();
        device->set_backend_id(cluster.devices()[g].backend_id);
        device->set_device_id(cluster.devices()[g].device_id);
      }
      GpuletPlan* gpulet = device->add_gpulets();
      gpulet->set_gpulet_id(absl::StrCat(cluster.devices()[g].backend_id, "/",
                                         cluster.devices()[g].device_id, "/g",
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

Plan InssPlan::Empty(const std::string& policy) {
  Plan empty;
  empty.set_policy(policy);
  empty.set_reason("no traffic");
  return empty;
}

}  // namespace tessera
