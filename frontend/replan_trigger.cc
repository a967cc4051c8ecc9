#include "frontend/replan_trigger.h"

#include <algorithm>

#include "frontend/request_monitor.h"
#include "spdlog/spdlog.h"

namespace tessera {

ReplanTrigger::ReplanTrigger(Options options,
                             const std::vector<std::string>& backend_ids)
    : options_(options) {
  for (const std::string& id : backend_ids) backends_[id] = BackendState{};
}

void ReplanTrigger::RequestLocked(const std::string& reason) {
  ++requests_;
  latest_reason_ = reason;
  if (reason_.empty()) reason_ = reason;
}

void ReplanTrigger::Request(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  RequestLocked(reason);
}

void ReplanTrigger::Override(const std::string& reason) {
  absl::MutexLock lock(&mu_);
  RequestLocked(reason);
  reason_ = reason;
}

std::string ReplanTrigger::Pending() const {
  absl::MutexLock lock(&mu_);
  return reason_;
}

ReplanTrigger::Taken ReplanTrigger::Take() const {
  absl::MutexLock lock(&mu_);
  return {reason_, requests_};
}

void ReplanTrigger::Finished(const Taken& taken, bool ok) {
  absl::MutexLock lock(&mu_);
  if (!ok) {
    if (reason_.empty()) reason_ = taken.reason;
    return;
  }
  // A request made while planning (a backend lost or draining, a policy
  // switch) may postdate what the plan read of the cluster: it stays
  // pending, under its own reason.
  reason_ = requests_ == taken.requests ? "" : latest_reason_;
}

void ReplanTrigger::WaitForRequest(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !reason_.empty();
  };
  mu_.AwaitWithTimeout(absl::Condition(&wake), timeout);
}

void ReplanTrigger::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

void ReplanTrigger::OnHeartbeat(const std::string& backend,
                                const absl::Status& health,
                                int64_t backend_epoch, int64_t plan_epoch) {
  absl::MutexLock lock(&mu_);
  BackendState& state = backends_[backend];
  if (!health.ok()) {
    ++state.misses;
    if (state.alive && state.misses >= options_.heartbeat_misses) {
      state.alive = false;
      spdlog::warn(
          "backend '{}' missed {} heartbeats ({}): re-planning without it",
          backend, state.misses, health.ToString());
      RequestLocked("backend '" + backend + "' lost");
    }
    return;
  }
  state.misses = 0;
  if (!state.alive) {
    state.alive = true;
    spdlog::info("backend '{}' answers again: re-planning with it", backend);
    RequestLocked("backend '" + backend + "' back");
  } else if (plan_epoch > 0 && backend_epoch < plan_epoch) {
    // Restarted (or missed a plan): it serves nothing of ours.
    spdlog::warn("backend '{}' is at plan epoch {}, not {}: re-planning",
                 backend, backend_epoch, plan_epoch);
    RequestLocked("backend '" + backend + "' lost its plan");
  }
}

void ReplanTrigger::OnDraining(const std::string& backend) {
  absl::MutexLock lock(&mu_);
  BackendState& state = backends_[backend];
  state.misses = 0;
  if (!state.alive) return;
  state.alive = false;
  spdlog::info(
      "backend '{}' is draining (shutting down): re-planning "
      "without it",
      backend);
  RequestLocked("backend '" + backend + "' draining");
}

bool ReplanTrigger::Alive(const std::string& backend) const {
  absl::MutexLock lock(&mu_);
  auto it = backends_.find(backend);
  return it != backends_.end() && it->second.alive;
}

std::map<std::string, bool> ReplanTrigger::AliveBackends() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, bool> alive;
  for (const auto& [id, state] : backends_) alive[id] = state.alive;
  return alive;
}

void ReplanTrigger::SetPlannedRates(std::map<std::string, double> rates) {
  absl::MutexLock lock(&mu_);
  planned_rates_ = std::move(rates);
}

std::map<std::string, double> ReplanTrigger::PlannedRates() const {
  absl::MutexLock lock(&mu_);
  return planned_rates_;
}

bool ReplanTrigger::CheckRates(const std::map<std::string, double>& observed,
                               double coverage) {
  if (coverage < 0.25) return false;
  absl::MutexLock lock(&mu_);
  std::string why;
  if (!RatesChanged(planned_rates_, observed, options_.replan_threshold,
                    options_.min_rate_rps, options_.rate_window_s * coverage,
                    &why)) {
    return false;
  }
  RequestLocked("rate change: " + why);
  return true;
}

bool ReplanTrigger::CheckRises(const std::map<std::string, double>& observed,
                               double window_s) {
  absl::MutexLock lock(&mu_);
  // Only rises count: a model below its planned rate is taken at it.
  std::map<std::string, double> risen = planned_rates_;
  for (const auto& [model, rate] : observed) {
    double& r = risen[model];
    r = std::max(r, rate);
  }
  std::string why;
  if (!RatesChanged(planned_rates_, risen, options_.replan_threshold,
                    options_.min_rate_rps, window_s, &why)) {
    return false;
  }
  RequestLocked("rate rise: " + why);
  return true;
}

}  // namespace tessera
