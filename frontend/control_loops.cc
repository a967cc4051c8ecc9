#include "frontend/control_loops.h"

#include <string>

#include "scheduler/standby_rule.h"
#include "spdlog/spdlog.h"

namespace tessera {

void ControlLoops::Start() {
  planner_ = std::thread([this] { PlannerLoop(); });
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
}

void ControlLoops::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  deps_.trigger->Stop();
  deps_.coordinator->Stop();
  if (planner_.joinable()) planner_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
}

bool ControlLoops::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

absl::Time ControlLoops::CheckRatesWhenDue(absl::Time* next_check,
                                           absl::Time* next_rise_check) {
  const absl::Time now = deps_.clock->Now();
  const bool rises = options_.rise_window > absl::ZeroDuration();
  if (!deps_.trigger->Pending().empty()) {
    return rises ? std::min(*next_check, *next_rise_check) : *next_check;
  }
  if (now >= *next_check) {
    *next_check = now + options_.replan_period;
    deps_.trigger->CheckRates(deps_.monitor->Rates(),
                              deps_.monitor->Coverage());
  }
  if (!rises) return *next_check;
  if (now >= *next_rise_check) {
    *next_rise_check = now + options_.rise_window / 2;
    deps_.trigger->CheckRises(deps_.monitor->Rates(options_.rise_window),
                              absl::ToDoubleSeconds(options_.rise_window));
  }
  return std::min(*next_check, *next_rise_check);
}

void ControlLoops::PlannerLoop() {
  const Clock* clock = deps_.clock;
  absl::Time next_check = clock->Now() + options_.replan_period;
  absl::Time next_rise_check = clock->Now() + options_.rise_window;
  int failures = 0;
  absl::Time last_log = absl::InfinitePast();
  std::string last_error;
  while (!stopping()) {
    const absl::Time wake = CheckRatesWhenDue(&next_check, &next_rise_check);
    const ReplanTrigger::Taken taken = deps_.trigger->Take();
    if (taken.reason.empty()) {
      deps_.trigger->WaitForRequest(
          std::max(absl::Milliseconds(10), wake - clock->Now()));
      continue;
    }
    absl::Status status = deps_.coordinator->PlanAndApply(taken.reason);
    deps_.trigger->Finished(taken, status.ok());
    if (status.ok()) {
      failures = 0;
      continue;
    }
    ++failures;
    // The first failure, a different failure, then at most one line
    // every 30 s.
    if (clock->Now() - last_log >= absl::Seconds(30) ||
        status.ToString() != last_error) {
      last_error = status.ToString();
      spdlog::warn(
          "planning ({}) failed ({} attempt(s) so far), retrying every {}: {}",
          taken.reason, failures,
          absl::FormatDuration(options_.plan_retry_interval),
          status.ToString());
      last_log = clock->Now();
    }
    deps_.coordinator->CountPlanFailure();
    deps_.coordinator->SleepUnlessStopped(options_.plan_retry_interval);
  }
}

void ControlLoops::HeartbeatLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stop),
                               options_.heartbeat_interval)) {
        return;
      }
    }
    CheckStandbys();
    for (BackendControl* backend : deps_.backends) {
      auto health = backend->Health(deps_.coordinator->Heartbeat(backend->id()),
                                    options_.heartbeat_interval);
      if (health.ok() && health->draining()) {
        deps_.trigger->OnDraining(backend->id());
        continue;
      }
      deps_.trigger->OnHeartbeat(backend->id(), health.status(),
                                 health.ok() ? health->epoch() : 0,
                                 deps_.coordinator->SettledEpoch());
    }
    if (deps_.housekeeping) deps_.housekeeping();
  }
}

void ControlLoops::CheckStandbys() {
  for (const auto& w : deps_.router->workers()) {
    if (w->options().gpulet.standby_share_percent() <= 0 || w->on_standby()) {
      continue;
    }
    const GpuletWorker::Window window = w->TakeWindow(kStandbyMinAnswered);
    if (!ShouldSwitchToStandby(window.answered, window.late)) continue;
    if (!w->SwitchToStandby()) continue;
    spdlog::warn(
        "gpulet {}: {} of {} calls missed their SLO since the last check: "
        "switched to its standby proxy ({}% share)",
        w->gpulet_id(), window.late, window.answered,
        w->options().gpulet.standby_share_percent());
    deps_.coordinator->CountStandbySwitch();
  }
}

}  // namespace tessera
