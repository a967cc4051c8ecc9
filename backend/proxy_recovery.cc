#include "backend/proxy_recovery.h"

#include "spdlog/spdlog.h"

namespace tessera {

bool ProxyRecovery::WillRestart(const GpuletTable::Route& route,
                                const std::string& id) const {
  if (!options_.enabled || !route.serving) return false;
  absl::MutexLock lock(&mu_);
  return !parked_.closed(id);
}

bool ProxyRecovery::Hold(const GpuletTable::Route& route, BatchRequest& batch,
                         ParkedBatches::Reply& reply) {
  if (!options_.enabled || !route.serving || route.proxy == nullptr ||
      route.proxy->alive()) {
    return false;
  }
  absl::MutexLock lock(&mu_);
  return parked_.Park(batch, reply, clock_->Now());  // refuses a closed one
}

std::vector<std::string> ProxyRecovery::Triage(
    const std::vector<std::string>& exited) {
  const absl::Time now = clock_->Now();
  std::vector<ParkedBatches::Entry> expired, abandoned;
  RestartBudget::Triage triage;
  {
    absl::MutexLock lock(&mu_);
    triage = restarts_.Sort(exited, now);
    for (const std::string& id : triage.given_up) {
      spdlog::error(
          "gpulet {}: its proxy keeps exiting ({} restarts within the "
          "budget's window); leaving it down until the next plan",
          id, restarts_.RecentRestarts(id, now));
      for (auto& e : parked_.Close(id)) abandoned.push_back(std::move(e));
    }
    expired = parked_.TakeExpired(now);
  }
  for (const std::string& id : triage.given_up) {
    metrics_->RecordProxyExit(id, "given_up");
  }
  for (const std::string& id : triage.restart) {
    spdlog::warn("gpulet {}: its proxy exited; restarting it", id);
    metrics_->RecordProxyExit(id, "restarted");
  }
  ParkedBatches::AnswerUnavailable(
      std::move(abandoned),
      "the gpulet's proxy keeps exiting: it stays down until the next plan");
  ParkedBatches::AnswerExpired(std::move(expired));
  return triage.restart;
}

std::vector<ParkedBatches::Entry> ProxyRecovery::Release(
    const std::vector<std::string>& ids) {
  std::vector<ParkedBatches::Entry> released;
  absl::MutexLock lock(&mu_);
  for (const std::string& id : ids) {
    for (auto& e : parked_.Take(id)) released.push_back(std::move(e));
  }
  return released;
}

std::vector<ParkedBatches::Entry> ProxyRecovery::PlanApplied() {
  absl::MutexLock lock(&mu_);
  restarts_.Reset();
  return parked_.ReopenAll();
}

void ProxyRecovery::Stop() {
  std::vector<ParkedBatches::Entry> held;
  {
    absl::MutexLock lock(&mu_);
    held = parked_.TakeAll();
  }
  ParkedBatches::AnswerUnavailable(std::move(held), "the backend is stopping");
}

int ProxyRecovery::held() const {
  absl::MutexLock lock(&mu_);
  return parked_.size();
}

}  // namespace tessera
