#pragma once

#include <string>

#include "admin.pb.h"
#include "frontend/admission_control.h"
#include "frontend/frontend_metrics.h"
#include "frontend/plan_coordinator.h"
#include "frontend/replan_trigger.h"
#include "frontend/request_monitor.h"
#include "frontend/router.h"

namespace tessera {

// What the frontend says of itself, read from its control plane's parts:
// readiness (the health checks), the admin service's status and the
// Prometheus exposition (whose plan, queue and admission gauges it
// refreshes first). Holds no state of its own. Thread-safe.
class StatusReporter {
 public:
  struct Deps {
    const PlanCoordinator* coordinator;
    const ReplanTrigger* trigger;
    const RequestMonitor* monitor;
    const Router* router;
    const AdmissionControl* admission;
    FrontendMetrics* metrics;
  };
  // Every dependency must outlive this object.
  explicit StatusReporter(Deps deps) : deps_(deps) {}

  // A plan is installed and every configured backend answers.
  bool Ready() const;
  AdminStatus Status() const;
  std::string RenderMetrics() const;

 private:
  const Deps deps_;
};

}  // namespace tessera
