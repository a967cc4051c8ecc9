#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "backend/proxy_launcher.h"
#include "common/grpc_status_util.h"

namespace tessera {
namespace testing {

// An in-memory proxy: answers every batch at once (OK, UNAVAILABLE once
// stopped, NOT_FOUND for a model it dropped) and records what it was sent.
class FakeProxy final : public Proxy {
 public:
  explicit FakeProxy(std::string gpulet_id) : gpulet_id_(std::move(gpulet_id)) {
    config_.set_gpulet_id(gpulet_id_);
  }
  explicit FakeProxy(ProxyConfig config)
      : gpulet_id_(config.gpulet_id()), config_(std::move(config)) {
    config_.clear_models();
  }

  void Execute(BatchRequest batch, DoneCallback done) override {
    BatchResponse response;
    response.set_batch_id(batch.batch_id());
    {
      absl::MutexLock lock(&mu_);
      if (stopped_) {
        ToStatusProto(absl::UnavailableError("stopped"),
                      response.mutable_status());
      } else if (dropped_.count(batch.model()) > 0) {
        ToStatusProto(absl::NotFoundError("dropped"),
                      response.mutable_status());
      } else {
        ++batches_;
        response.set_exec_time_us(100);
      }
    }
    done(std::move(response));
  }
  bool Drain(absl::Duration) override { return true; }
  void DropModels(const std::vector<std::string>& models) override {
    absl::MutexLock lock(&mu_);
    dropped_.insert(models.begin(), models.end());
  }
  void Stop(absl::Duration) override {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  bool alive() const override {
    absl::MutexLock lock(&mu_);
    return !stopped_;
  }
  pid_t pid() const override { return 1; }
  const ProxyConfig& config() const override { return config_; }
  const std::vector<MeasuredLatency>& warmup() const override {
    return warmup_;
  }
  void SetInterferenceFactors(std::map<std::string, double> f) override {
    absl::MutexLock lock(&mu_);
    factors_ = std::move(f);
  }

  const std::string& gpulet_id() const { return gpulet_id_; }
  int batches() const {
    absl::MutexLock lock(&mu_);
    return batches_;
  }
  bool stopped() const { return !alive(); }
  std::set<std::string> dropped() const {
    absl::MutexLock lock(&mu_);
    return dropped_;
  }
  std::map<std::string, double> factors() const {
    absl::MutexLock lock(&mu_);
    return factors_;
  }

 private:
  const std::string gpulet_id_;
  ProxyConfig config_;
  const std::vector<MeasuredLatency> warmup_;
  mutable absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int batches_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, double> factors_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dropped_ ABSL_GUARDED_BY(mu_);
};

// Launches FakeProxy objects, or fails for the gpulet ids it is told to.
// Keeps every proxy it launched, in launch order, with the options.
class FakeLauncher final : public ProxyLauncher {
 public:
  absl::StatusOr<std::shared_ptr<Proxy>> Launch(
      const ProxyHandle::Options& options) override {
    absl::MutexLock lock(&mu_);
    if (fail_.count(options.config.gpulet_id()) > 0) {
      return absl::ResourceExhaustedError("fake launch failure");
    }
    auto proxy = std::make_shared<FakeProxy>(options.config);
    launched_.push_back({options, proxy});
    return std::shared_ptr<Proxy>(proxy);
  }

  void FailFor(const std::string& gpulet_id) {
    absl::MutexLock lock(&mu_);
    fail_.insert(gpulet_id);
  }
  struct Launched {
    ProxyHandle::Options options;
    std::shared_ptr<FakeProxy> proxy;
  };
  std::vector<Launched> launched() const {
    absl::MutexLock lock(&mu_);
    return launched_;
  }
  // The most recent proxy launched for `gpulet_id` (null if none).
  std::shared_ptr<FakeProxy> Last(const std::string& gpulet_id) const {
    absl::MutexLock lock(&mu_);
    for (auto it = launched_.rbegin(); it != launched_.rend(); ++it) {
      if (it->options.config.gpulet_id() == gpulet_id) return it->proxy;
    }
    return nullptr;
  }

 private:
  mutable absl::Mutex mu_;
  std::set<std::string> fail_ ABSL_GUARDED_BY(mu_);
  std::vector<Launched> launched_ ABSL_GUARDED_BY(mu_);
};

}  // namespace testing
}  // namespace tessera
