#include "frontend/router.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace tessera {

std::vector<std::shared_ptr<GpuletWorker>> Router::Install(
    std::vector<std::shared_ptr<GpuletWorker>> workers) {
  std::map<std::string, Targets> by_model;
  for (const auto& w : workers) {
    for (const ModelAssignment& a : w->options().gpulet.models()) {
      Targets& t = by_model[a.model()];
      t.workers.push_back(w);
      t.choice.Add(a.rate_rps());
      if (!w->options().failed_models.count(a.model())) ++t.loaded;
    }
  }
  absl::MutexLock lock(&mu_);
  std::set<GpuletWorker*> kept;
  for (const auto& w : workers) kept.insert(w.get());
  std::vector<std::shared_ptr<GpuletWorker>> retired;
  for (auto& w : workers_) {
    if (!kept.count(w.get())) retired.push_back(w);
  }
  workers_ = std::move(workers);
  by_model_ = std::move(by_model);
  return retired;
}

absl::Status Router::Submit(std::unique_ptr<InferCall>& call) {
  {
    absl::MutexLock lock(&mu_);
    if (!accepting_) {
      return absl::UnavailableError(
          "the frontend is shutting down; retry on another replica or after "
          "its restart");
    }
  }
  if (monitor_ != nullptr) monitor_->Record(call->config->name());
  return Reroute(call);
}

absl::Duration Router::QueueWait(const std::string& model) const {
  std::vector<std::shared_ptr<GpuletWorker>> targets;
  {
    absl::MutexLock lock(&mu_);
    auto it = by_model_.find(model);
    if (it == by_model_.end()) return absl::ZeroDuration();
    targets = it->second.workers;
  }
  absl::Duration shortest = absl::InfiniteDuration();
  for (const auto& worker : targets) {
    shortest = std::min(shortest, worker->QueueWait(model));
  }
  return targets.empty() ? absl::ZeroDuration() : shortest;
}

void Router::StopAccepting() {
  absl::MutexLock lock(&mu_);
  accepting_ = false;
}

size_t Router::Drain(absl::Time until) const {
  size_t undrained = 0;
  for (const auto& w : workers()) {
    while (w->queued() > 0 && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    w->WaitIdle(std::max(absl::ZeroDuration(), until - absl::Now()));
    undrained += w->queued();
  }
  return undrained;
}

absl::Status Router::Reroute(std::unique_ptr<InferCall>& call) {
  std::shared_ptr<GpuletWorker> worker;
  {
    absl::MutexLock lock(&mu_);
    auto it = by_model_.find(call->config->name());
    if (it == by_model_.end() || it->second.workers.empty()) {
      return absl::UnavailableError(absl::StrCat(
          "no gpulet serves model '", call->config->name(),
          by_model_.empty() ? "' yet: the server has no plan" : "'"));
    }
    worker = it->second.workers[it->second.choice.Next()];
  }
  worker->Submit(std::move(call));
  return absl::OkStatus();
}

bool Router::HasPlan() const {
  absl::MutexLock lock(&mu_);
  return !workers_.empty();
}

bool Router::Serves(const std::string& model) const {
  absl::MutexLock lock(&mu_);
  auto it = by_model_.find(model);
  return it != by_model_.end() && it->second.loaded > 0;
}

bool Router::Places(const std::string& model) const {
  absl::MutexLock lock(&mu_);
  return by_model_.count(model) > 0;
}

std::vector<std::shared_ptr<GpuletWorker>> Router::workers() const {
  absl::MutexLock lock(&mu_);
  return workers_;
}

}  // namespace tessera
