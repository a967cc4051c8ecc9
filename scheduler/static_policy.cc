#include "scheduler/static_policy.h"

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "scheduler/policy_registry.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> StaticPolicy::Create(
    const PolicyOptions& options) {
  if (options.static_plan.devices_size() == 0) {
    return absl::InvalidArgumentError(
        "policy 'static' needs a static_plan with at least one device");
  }
  return std::unique_ptr<SchedulingPolicy>(
      new StaticPolicy(options.static_plan));
}

absl::Status StaticPolicy::CheckStaticPlanModels(
    const Plan& plan, const std::set<std::string>& known) {
  for (const DevicePlan& device : plan.devices()) {
    for (const GpuletPlan& g : device.gpulets()) {
      for (const ModelAssignment& a : g.models()) {
        if (!known.count(a.model())) {
          return absl::InvalidArgumentError(absl::StrCat(
              "static plan: gpulet '", g.gpulet_id(), "' serves model '",
              a.model(), "', which is not in the model repository"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status StaticPolicy::CheckStaticPlanServes(
    const Plan& plan, const std::vector<std::string>& served) {
  std::set<std::string> planned;
  for (const DevicePlan& device : plan.devices()) {
    for (const GpuletPlan& g : device.gpulets()) {
      for (const ModelAssignment& a : g.models()) planned.insert(a.model());
    }
  }
  for (const std::string& name : served) {
    if (!planned.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "static plan: no gpulet serves model '", name,
          "' of the model repository; add it to a gpulet of static_plan, or "
          "remove it from the repository"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Plan> StaticPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  std::set<std::pair<std::string, std::string>> devices;
  for (const DeviceSnapshot& d : snapshot.devices) {
    devices.emplace(d.backend_id, d.device_id);
  }
  std::map<std::string, const ModelConfig*> models;
  for (const ModelSnapshot& m : snapshot.models) {
    models[m.config.name()] = &m.config;
  }
  std::set<std::string> served;
  std::set<std::string> gpulet_ids;
  Plan plan;
  for (const DevicePlan& device : plan_.devices()) {
    if (!devices.count({device.backend_id(), device.device_id()})) {
      return absl::FailedPreconditionError(absl::StrCat(
          "static plan names device '", device.device_id(), "' on backend '",
          device.backend_id(), "', which is not registered"));
    }
    DevicePlan* planned = plan.add_devices();
    *planned = device;
    planned->clear_gpulets();
    double total_share = 0;
    for (const GpuletPlan& g : device.gpulets()) {
      if (!gpulet_ids.insert(g.gpulet_id()).second || g.gpulet_id().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "static plan: gpulet id '", g.gpulet_id(), "' empty or repeated"));
      }
      if (!(g.share_percent() > 0 && g.share_percent() <= 100)) {
        return absl::InvalidArgumentError(
            absl::StrCat("static plan: gpulet '", g.gpulet_id(),
                         "' share_percent must be in (0, 100]"));
      }
      total_share += g.share_percent();
      GpuletPlan kept = g;
      kept.clear_models();
      for (const ModelAssignment& a : g.models()) {
        // A model the snapshot does not have (unloaded through the
        // repository API, or its folder invalid) is not served; the
        // frontend checks the plan's names against the repository once,
        // at start.
        auto it = models.find(a.model());
        if (it == models.end()) continue;
        if (a.batch_size() < 1 ||
            a.batch_size() > it->second->max_batch_size()) {
          return absl::InvalidArgumentError(
              absl::StrCat("static plan: model '", a.model(), "' batch_size ",
                           a.batch_size(), " outside [1, ",
                           it->second->max_batch_size(), "]"));
        }
        served.insert(a.model());
        *kept.add_models() = a;
      }
      // A gpulet left without models is not started.
      if (kept.models_size() > 0) *planned->add_gpulets() = std::move(kept);
    }
    if (total_share > 100 + 1e-9) {
      return absl::InvalidArgumentError(
          absl::StrCat("static plan: device '", device.device_id(),
                       "' shares sum to ", total_share, "% > 100%"));
    }
  }
  for (const auto& [name, config] : models) {
    if (!served.count(name)) {
      return absl::ResourceExhaustedError(
          absl::StrCat("static plan serves no gpulet for model '", name, "'"));
    }
  }
  plan.set_policy("static");
  plan.set_reason("plan from configuration");
  return plan;
}

REGISTER_SCHEDULING_POLICY("static", StaticPolicy::Create);

}  // namespace tessera
