#include "frontend/status_reporter.h"

#include <map>

namespace tessera {

bool StatusReporter::Ready() const {
  if (deps_.coordinator->current_plan().epoch() == 0) return false;
  for (const auto& [id, up] : deps_.trigger->AliveBackends()) {
    if (!up) return false;
  }
  return true;
}

AdminStatus StatusReporter::Status() const {
  AdminStatus status;
  status.set_policy(deps_.coordinator->policy()->name());
  *status.mutable_plan() = deps_.coordinator->current_plan();
  const PlanCoordinator::Stats stats = deps_.coordinator->stats();
  status.set_plans_installed(stats.plans);
  status.set_plan_failures(stats.plan_failures);
  for (const auto& [m, r] : deps_.trigger->PlannedRates()) {
    (*status.mutable_planned_rates_rps())[m] = r;
  }
  for (const auto& [id, up] : deps_.trigger->AliveBackends()) {
    (*status.mutable_backends_up())[id] = up;
  }
  for (const auto& [m, r] : deps_.monitor->Rates()) {
    (*status.mutable_observed_rates_rps())[m] = r;
  }
  for (const auto& w : deps_.router->workers()) {
    if (w->on_standby()) status.add_gpulets_on_standby(w->gpulet_id());
  }
  return status;
}

std::string StatusReporter::RenderMetrics() const {
  const Plan plan = deps_.coordinator->current_plan();
  const PlanCoordinator::Stats stats = deps_.coordinator->stats();
  const std::map<std::string, bool> alive = deps_.trigger->AliveBackends();
  deps_.metrics->plan_epoch()->Set({}, static_cast<double>(plan.epoch()));
  deps_.metrics->plans()->SetTotal({}, static_cast<double>(stats.plans));
  deps_.metrics->gpulets_started()->SetTotal(
      {}, static_cast<double>(stats.gpulets_started));
  deps_.metrics->handed_over()->SetTotal(
      {}, static_cast<double>(stats.calls_handed_over));
  deps_.metrics->standby_switches()->SetTotal(
      {}, static_cast<double>(stats.standby_switches));
  const AdmissionControl::Usage held = deps_.admission->usage();
  deps_.metrics->held_calls()->Set({}, static_cast<double>(held.requests));
  deps_.metrics->held_bytes()->Set({}, static_cast<double>(held.bytes));
  deps_.metrics->admission_refused()->SetTotal(
      {}, static_cast<double>(held.refused));
  deps_.metrics->gpulet_share()->Clear();
  for (const DevicePlan& d : plan.devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      deps_.metrics->gpulet_share()->Set(
          {d.backend_id(), d.device_id(), g.gpulet_id()}, g.share_percent());
    }
  }
  deps_.metrics->queue_depth()->Clear();
  for (const auto& w : deps_.router->workers()) {
    deps_.metrics->queue_depth()->Set({w->gpulet_id()},
                                      static_cast<double>(w->queued()));
  }
  for (const auto& [model, rate] : deps_.monitor->Rates()) {
    deps_.metrics->observed_rate()->Set({model}, rate);
  }
  for (const auto& [id, up] : alive) {
    deps_.metrics->backend_up()->Set({id}, up ? 1 : 0);
  }
  return deps_.metrics->registry().Render();
}

}  // namespace tessera
