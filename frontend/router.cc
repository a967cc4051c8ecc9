#include "frontend/router.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace tessera {

std::vector<std::shared_ptr<GpuletWorker>> Router::Install(
    std::vector<std::shared_ptr<GpuletWorker>> workers) {
  std::map<std::string, std::vector<Target>> by_model;
  for (const auto& w : workers) {
    for (const ModelAssignment& a : w->options().gpulet.models()) {
      by_model[a.model()].push_back(
          Target{w, a.rate_rps() > 0 ? a.rate_rps() : 1.0, 0});
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
  std::shared_ptr<GpuletWorker> worker;
  {
    absl::MutexLock lock(&mu_);
    auto it = by_model_.find(call->config->name());
    if (it == by_model_.end() || it->second.empty()) {
      return absl::UnavailableError(absl::StrCat(
          "no gpulet serves model '", call->config->name(),
          by_model_.empty() ? "' yet: the server has no plan" : "'"));
    }
    // Smooth weighted round robin.
    std::vector<Target>& targets = it->second;
    double total = 0;
    Target* best = nullptr;
    for (Target& t : targets) {
      t.credit += t.weight;
      total += t.weight;
      if (best == nullptr || t.credit > best->credit) best = &t;
    }
    best->credit -= total;
    worker = best->worker;
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
  return by_model_.count(model) > 0;
}

std::vector<std::shared_ptr<GpuletWorker>> Router::workers() const {
  absl::MutexLock lock(&mu_);
  return workers_;
}

}  // namespace tessera
