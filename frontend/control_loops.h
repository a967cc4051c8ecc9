#pragma once

#include <functional>

#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "frontend/backend_control.h"
#include "frontend/plan_coordinator.h"
#include "frontend/replan_trigger.h"
#include "frontend/request_monitor.h"
#include "frontend/router.h"

namespace tessera {

// The frontend's two control threads. The planner checks the observed
// rates every replan period (and rises over the rise window every half of
// it, when set) and makes a plan whenever the trigger has a
// reason (retrying failures every plan_retry_interval). The heartbeat
// thread asks every backend for its health each interval, feeds the
// trigger, and moves gpulets whose calls miss their SLO to their standby
// (ShouldSwitchToStandby), then runs the housekeeping hook. Start() once;
// Stop() joins both.
class ControlLoops {
 public:
  struct Options {
    absl::Duration replan_period = absl::Seconds(20);
    absl::Duration heartbeat_interval = absl::Seconds(1);
    absl::Duration plan_retry_interval = absl::Seconds(1);
    // FrontendConfig.rise_window_s: rises over this window are checked
    // every half of it; zero: off.
    absl::Duration rise_window = absl::ZeroDuration();
  };
  // Borrowed; all must outlive the loops.
  struct Deps {
    PlanCoordinator* coordinator = nullptr;
    ReplanTrigger* trigger = nullptr;
    RequestMonitor* monitor = nullptr;
    Router* router = nullptr;
    std::vector<BackendControl*> backends;
    const Clock* clock = nullptr;
    // Called on the heartbeat thread once per interval (may be empty).
    std::function<void()> housekeeping;
  };
  ControlLoops(Options options, Deps deps)
      : options_(options), deps_(std::move(deps)) {}
  ~ControlLoops() { Stop(); }

  void Start();
  // Stops the trigger and the coordinator's waits, then joins both
  // threads. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void PlannerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Checks the rates (and rises) whose time has come, moving
  // `next_check` and `next_rise_check` on; returns when the next is due.
  absl::Time CheckRatesWhenDue(absl::Time* next_check,
                               absl::Time* next_rise_check);
  void HeartbeatLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void CheckStandbys();
  bool stopping() const ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  const Deps deps_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread planner_;
  std::thread heartbeat_;
};

}  // namespace tessera
