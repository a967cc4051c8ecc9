#pragma once

// In-memory backends and a coordinator over them, for the frontend's
// control-plane tests.
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "frontend/backend_control.h"
#include "frontend/plan_coordinator.h"
#include "frontend/replan_trigger.h"
#include "frontend/request_monitor.h"
#include "frontend/router.h"
#include "frontend/unloaded_models.h"
#include "gtest/gtest.h"
#include "scheduler/scheduling_policy.h"
#include "tests/common/temp_model_repository.h"

namespace tessera {
namespace testing {

// Waits until `n` threads have arrived, or 30 s; true if all did.
class Rendezvous {
 public:
  explicit Rendezvous(int n) : n_(n) {}
  bool Arrive() {
    absl::MutexLock lock(&mu_);
    ++arrived_;
    auto all = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return arrived_ >= n_;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30));
  }

 private:
  const int n_;
  absl::Mutex mu_;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
};

// A backend with one cpu device that accepts every plan (or refuses, when
// told), records the calls, and holds GetNodeInfo and ApplyPlan until every
// backend of the test has entered it (bounded), so a test can see them
// overlap.
class FakeBackend final : public BackendControl {
 public:
  FakeBackend(std::string id, Rendezvous* all_applying,
              Rendezvous* all_asked = nullptr)
      : id_(std::move(id)),
        address_("fake:" + id_),
        applying_(all_applying),
        asked_(all_asked) {}

  const std::string& id() const override { return id_; }
  const std::string& address() const override { return address_; }
  absl::StatusOr<NodeInfo> GetNodeInfo(absl::Duration) override {
    if (asked_ != nullptr && !asked_->Arrive()) {
      return absl::DeadlineExceededError("the other backends were never asked");
    }
    NodeInfo info;
    info.set_backend_id(id_);
    DeviceInfo* d = info.add_devices();
    d->set_device_id("cpu0");
    d->set_kind(DEVICE_KIND_CPU);
    d->set_num_cores(2);
    return info;
  }
  absl::StatusOr<ApplyPlanResponse> ApplyPlan(const Plan& plan,
                                              absl::Duration) override {
    if (applying_ != nullptr && !applying_->Arrive()) {
      return absl::DeadlineExceededError("the other backends never applied");
    }
    absl::MutexLock lock(&mu_);
    applied_.push_back(plan.epoch());
    if (refuse_) return absl::ResourceExhaustedError("no memory");
    ApplyPlanResponse response;
    for (const DevicePlan& d : plan.devices()) {
      if (d.backend_id() != id_) continue;
      for (const GpuletPlan& g : d.gpulets()) {
        response.add_gpulets()->set_gpulet_id(g.gpulet_id());
      }
    }
    return response;
  }
  absl::Status CommitPlan(int64_t epoch, absl::Duration) override {
    absl::MutexLock lock(&mu_);
    committed_.push_back(epoch);
    return absl::OkStatus();
  }
  absl::StatusOr<HealthResponse> Health(const HealthRequest& request,
                                        absl::Duration) override {
    absl::MutexLock lock(&mu_);
    health_requests_.push_back(request);
    if (down_) return absl::UnavailableError("connection refused");
    HealthResponse health;
    health.set_epoch(applied_.empty() ? 0 : applied_.back());
    health.set_draining(draining_);
    return health;
  }
  void SetDown(bool down) {
    absl::MutexLock lock(&mu_);
    down_ = down;
  }
  void SetDraining() {
    absl::MutexLock lock(&mu_);
    draining_ = true;
  }
  void Send(BatchRequest, Callback done) override {
    done(absl::UnavailableError("no batches in this test"), BatchResponse());
  }

  void Refuse() {
    absl::MutexLock lock(&mu_);
    refuse_ = true;
  }
  std::vector<int64_t> applied() const {
    absl::MutexLock lock(&mu_);
    return applied_;
  }
  std::vector<int64_t> committed() const {
    absl::MutexLock lock(&mu_);
    return committed_;
  }
  std::vector<HealthRequest> health_requests() const {
    absl::MutexLock lock(&mu_);
    return health_requests_;
  }

 private:
  const std::string id_;
  const std::string address_;
  Rendezvous* applying_;
  Rendezvous* asked_;
  mutable absl::Mutex mu_;
  bool refuse_ ABSL_GUARDED_BY(mu_) = false;
  bool down_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int64_t> applied_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> committed_ ABSL_GUARDED_BY(mu_);
  std::vector<HealthRequest> health_requests_ ABSL_GUARDED_BY(mu_);
};

// Every model on one whole gpulet of the first device of each backend;
// its name says which policy made it.
class OneGpuletPerBackend final : public SchedulingPolicy {
 public:
  explicit OneGpuletPerBackend(std::string name) : name_(std::move(name)) {}
  absl::StatusOr<Plan> Schedule(const ClusterSnapshot& s) const override {
    Plan plan;
    plan.set_policy(name_);
    for (const DeviceSnapshot& d : s.devices) {
      DevicePlan* dp = plan.add_devices();
      dp->set_backend_id(d.backend_id);
      dp->set_device_id(d.device_id);
      GpuletPlan* g = dp->add_gpulets();
      g->set_share_percent(100);
      for (const ModelSnapshot& m : s.models) {
        ModelAssignment* a = g->add_models();
        a->set_model(m.config.name());
        a->set_batch_size(1);
        a->set_rate_rps(m.rate_rps / s.devices.size());
      }
    }
    return plan;
  }
  std::string name() const override { return name_; }

 private:
  const std::string name_;
};

// A coordinator over `backends` FakeBackends b0, b1, ... of one repository
// holding model "m", planned by OneGpuletPerBackend("first").
class PlanCoordinatorFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto repo = ModelRepository::Load(repo_dir_.root());
    ASSERT_TRUE(repo.ok()) << repo.status();
    repo_ = std::move(*repo);
  }

  // `rise_window_s` and `monitor` (default: monitor_) as the frontend's.
  std::unique_ptr<PlanCoordinator> MakeCoordinator(
      int backends, bool overlap = false, double rise_window_s = 0,
      RequestMonitor* monitor = nullptr) {
    std::vector<std::string> ids;
    if (overlap) {
      applying_ = std::make_unique<Rendezvous>(backends);
      asked_ = std::make_unique<Rendezvous>(backends);
    }
    for (int i = 0; i < backends; ++i) {
      ids.push_back("b" + std::to_string(i));
      backends_.push_back(std::make_unique<FakeBackend>(
          ids.back(), applying_.get(), asked_.get()));
    }
    trigger_ = std::make_unique<ReplanTrigger>(ReplanTrigger::Options(), ids);
    PlanCoordinator::Options options;
    options.config.set_min_rate_rps(1);
    options.config.set_time_scale(1);
    options.config.set_drain_timeout_s(5);
    options.config.set_rise_window_s(rise_window_s);
    auto coordinator = std::make_unique<PlanCoordinator>(
        options,
        PlanCoordinator::Deps{repo_.get(), &profiles_, &router_,
                              monitor != nullptr ? monitor : &monitor_,
                              trigger_.get(), &unloaded_, RealClock::Get()},
        std::make_shared<OneGpuletPerBackend>("first"));
    std::vector<BackendControl*> controls;
    for (auto& b : backends_) controls.push_back(b.get());
    coordinator->SetBackends(controls);
    return coordinator;
  }

  TempModelRepository repo_dir_{{"m"}};
  std::unique_ptr<ModelRepository> repo_;
  RequestMonitor monitor_{RequestMonitor::Options{absl::Seconds(10), 20},
                          RealClock::Get()};
  Router router_{&monitor_};
  UnloadedModels unloaded_;
  ProfileStore profiles_;
  std::unique_ptr<Rendezvous> applying_;
  std::unique_ptr<Rendezvous> asked_;
  std::vector<std::unique_ptr<FakeBackend>> backends_;
  std::unique_ptr<ReplanTrigger> trigger_;
};

}  // namespace testing
}  // namespace tessera
