#include "scheduler/plan_check.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/resolve_memo.h"

namespace tessera {
namespace {

absl::Status Broken(const std::string& why) {
  return absl::FailedPreconditionError(absl::StrCat("plan check: ", why));
}

}  // namespace

absl::StatusOr<std::vector<GpuLayout>> PlanCheck::Layouts(
    const Plan& plan, double rate_scale) const {
  std::map<std::string, const ModelDemand*> demand_of;
  for (const ModelDemand& d : inputs_->demands()) demand_of[d.name] = &d;
  // Each model's planned rate in all, to split today's in proportion.
  std::map<std::string, double> planned;
  for (const DevicePlan& d : plan.devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      for (const ModelAssignment& a : g.models()) {
        planned[a.model()] += a.rate_rps();
      }
    }
  }
  for (const auto& [name, demand] : demand_of) {
    if (planned[name] <= 0) {
      return Broken(absl::StrCat("model '", name, "' has no planned rate"));
    }
  }
  std::vector<GpuLayout> layouts;
  for (const DevicePlan& d : plan.devices()) {
    const DeviceSnapshot* device = nullptr;
    for (const DeviceSnapshot* g : inputs_->gpus()) {
      if (g->backend_id == d.backend_id() && g->device_id == d.device_id()) {
        device = g;
      }
    }
    if (device == nullptr) {
      return Broken(absl::StrCat("device ", d.backend_id(), "/", d.device_id(),
                                 " is not in the cluster"));
    }
    std::vector<double> shares;
    for (const GpuletPlan& g : d.gpulets()) shares.push_back(g.share_percent());
    GpuLayout layout(device, shares);
    layout.set_interference_within_headroom(within_headroom_);
    for (int k = 0; k < d.gpulets_size(); ++k) {
      const GpuletPlan& g = d.gpulets(k);
      if (g.scheduler() != GPULET_SCHEDULER_BATCHES) {
        return Broken(
            absl::StrCat("gpulet ", g.gpulet_id(), " is not batch-scheduled"));
      }
      for (const ModelAssignment& a : g.models()) {
        auto it = demand_of.find(a.model());
        if (it == demand_of.end()) {
          return Broken(
              absl::StrCat("model '", a.model(), "' has no traffic now"));
        }
        const double rate = rate_scale * it->second->rate_rps * a.rate_rps() /
                            planned[a.model()];
        layout.slots()[k].slices.push_back(Slice{it->second, rate});
      }
    }
    layouts.push_back(std::move(layout));
  }
  return layouts;
}

absl::StatusOr<std::vector<GpuLayout>> PlanCheck::Check(
    const Plan& plan, double rate_scale) const {
  ASSIGN_OR_RETURN(std::vector<GpuLayout> layouts, Layouts(plan, rate_scale));
  for (GpuLayout& layout : layouts) {
    if (!inputs_->resolve_memo().Resolve(interference_, &layout)) {
      return Broken(absl::StrCat("a gpulet of ", layout.device()->backend_id,
                                 "/", layout.device()->device_id,
                                 " misses an SLO at today's rates"));
    }
  }
  return layouts;
}

absl::StatusOr<Plan> PlanCheck::Rebatch(const Plan& plan,
                                        double rate_scale) const {
  ASSIGN_OR_RETURN(const std::vector<GpuLayout> layouts,
                   Check(plan, rate_scale));
  return BuildPlan(layouts, plan.policy(), plan.reason());
}

double PlanCheck::ScaleMargin(const Plan& plan, double max_scale,
                              int steps) const {
  if (!Check(plan, 1).ok()) return 0;
  if (Check(plan, max_scale).ok()) return max_scale;
  double lo = 1, hi = max_scale;
  for (int i = 0; i < steps; ++i) {
    const double mid = (lo + hi) / 2;
    (Check(plan, mid).ok() ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace tessera
