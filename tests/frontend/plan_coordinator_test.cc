// PlanCoordinator on in-memory backends: plans are applied and committed on
// every live backend at once, a refusal rolls back those that accepted, and
// the policy can be switched while plans are made.
#include "frontend/plan_coordinator.h"

#include "frontend/control_loops.h"

#include <atomic>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/temp_model_repository.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
// told), records the calls, and holds ApplyPlan until every backend of the
// test has entered it (bounded), so a test can see them overlap.
class FakeBackend final : public BackendControl {
 public:
  FakeBackend(std::string id, Rendezvous* all_applying)
      : id_(std::move(id)), address_("fake:" + id_), applying_(all_applying) {}

  const std::string& id() const override { return id_; }
  const std::string& address() const override { return address_; }
  absl::StatusOr<NodeInfo> GetNodeInfo(absl::Duration) override {
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
  absl::StatusOr<HealthResponse> Health(absl::Duration) override {
    absl::MutexLock lock(&mu_);
    if (down_) return absl::UnavailableError("connection refused");
    HealthResponse health;
    health.set_epoch(applied_.empty() ? 0 : applied_.back());
    return health;
  }
  void SetDown(bool down) {
    absl::MutexLock lock(&mu_);
    down_ = down;
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

 private:
  const std::string id_;
  const std::string address_;
  Rendezvous* applying_;
  mutable absl::Mutex mu_;
  bool refuse_ ABSL_GUARDED_BY(mu_) = false;
  bool down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<int64_t> applied_ ABSL_GUARDED_BY(mu_);
  std::vector<int64_t> committed_ ABSL_GUARDED_BY(mu_);
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

class PlanCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto repo = ModelRepository::Load(repo_dir_.root());
    ASSERT_TRUE(repo.ok()) << repo.status();
    repo_ = std::move(*repo);
  }

  std::unique_ptr<PlanCoordinator> MakeCoordinator(int backends,
                                                   bool overlap = false) {
    std::vector<std::string> ids;
    if (overlap) applying_ = std::make_unique<Rendezvous>(backends);
    for (int i = 0; i < backends; ++i) {
      ids.push_back("b" + std::to_string(i));
      backends_.push_back(
          std::make_unique<FakeBackend>(ids.back(), applying_.get()));
    }
    trigger_ = std::make_unique<ReplanTrigger>(ReplanTrigger::Options(), ids);
    PlanCoordinator::Options options;
    options.config.set_min_rate_rps(1);
    options.config.set_time_scale(1);
    options.config.set_drain_timeout_s(5);
    auto coordinator = std::make_unique<PlanCoordinator>(
        options,
        PlanCoordinator::Deps{repo_.get(), &profiles_, &router_, &monitor_,
                              trigger_.get(), &unloaded_, RealClock::Get()},
        std::make_shared<OneGpuletPerBackend>("first"));
    std::vector<BackendControl*> controls;
    for (auto& b : backends_) controls.push_back(b.get());
    coordinator->SetBackends(controls);
    return coordinator;
  }

  testing::TempModelRepository repo_dir_{{"m"}};
  std::unique_ptr<ModelRepository> repo_;
  RequestMonitor monitor_{RequestMonitor::Options{absl::Seconds(10), 20},
                          RealClock::Get()};
  Router router_{&monitor_};
  UnloadedModels unloaded_;
  ProfileStore profiles_;
  std::unique_ptr<Rendezvous> applying_;
  std::vector<std::unique_ptr<FakeBackend>> backends_;
  std::unique_ptr<ReplanTrigger> trigger_;
};

TEST_F(PlanCoordinatorTest, AppliesOnEveryBackendAtOnceThenCommits) {
  // Each fake waits in ApplyPlan until all four are in it: applied one
  // after another, the first would give up after 30 s and fail the plan.
  auto coordinator = MakeCoordinator(4, /*overlap=*/true);
  ASSERT_TRUE(coordinator->PlanAndApply("initial plan").ok());
  for (const auto& b : backends_) {
    EXPECT_THAT(b->applied(), ElementsAre(1)) << b->id();
    EXPECT_THAT(b->committed(), ElementsAre(1)) << b->id();
  }
  const Plan plan = coordinator->current_plan();
  EXPECT_EQ(plan.epoch(), 1);
  EXPECT_EQ(plan.devices_size(), 4);
  EXPECT_THAT(plan.reason(), HasSubstr("initial plan"));
  EXPECT_EQ(router_.workers().size(), 4u);
  EXPECT_TRUE(router_.Serves("m"));
  EXPECT_EQ(coordinator->stats().plans, 1);
  EXPECT_EQ(coordinator->SettledEpoch(), 1);
  EXPECT_TRUE(coordinator->WaitForPlan(absl::ZeroDuration()));
  // The trigger now compares rates with those the plan was made for.
  EXPECT_EQ(trigger_->PlannedRates().at("m"), 1);
}

TEST_F(PlanCoordinatorTest, ARefusalRollsBackTheBackendsThatAccepted) {
  auto coordinator = MakeCoordinator(3);
  ASSERT_TRUE(coordinator->PlanAndApply("initial plan").ok());
  backends_[1]->Refuse();
  absl::Status s = coordinator->PlanAndApply("admin");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("backend 'b1' rejected plan"));
  // b0 and b2 took epoch 2, then went back to epoch 1 and committed it.
  for (int i : {0, 2}) {
    EXPECT_THAT(backends_[i]->applied(), ElementsAre(1, 2, 1));
    EXPECT_THAT(backends_[i]->committed(), ElementsAre(1, 1));
  }
  EXPECT_THAT(backends_[1]->applied(), ElementsAre(1, 2));
  EXPECT_EQ(coordinator->current_plan().epoch(), 1);
  EXPECT_EQ(router_.workers().size(), 3u);
  EXPECT_EQ(router_.workers()[0]->options().epoch, 1);
}

TEST_F(PlanCoordinatorTest, LostBackendsAndUnloadedModelsAreLeftOut) {
  auto coordinator = MakeCoordinator(2);
  for (int i = 0; i < 3; ++i) {
    trigger_->OnHeartbeat("b1", absl::UnavailableError("down"), 0, 0);
  }
  ASSERT_TRUE(coordinator->PlanAndApply("b1 lost").ok());
  EXPECT_EQ(coordinator->current_plan().devices_size(), 1);
  EXPECT_TRUE(backends_[1]->applied().empty());

  unloaded_.Set("m", true);
  ASSERT_TRUE(coordinator->PlanAndApply("m unloaded").ok());
  EXPECT_FALSE(router_.Serves("m"));
}

// SetPolicy replaces the policy while plans are being made: each plan is
// made whole by one of the two, and nothing the planner uses is freed
// under it (run under ASan by lint.sanitize).
TEST_F(PlanCoordinatorTest, PolicySwitchesDuringPlanningAreSafe) {
  auto coordinator = MakeCoordinator(2);
  std::atomic<bool> done{false};
  std::thread switcher([&] {
    int i = 0;
    while (!done.load()) {
      coordinator->SetPolicy(std::make_shared<OneGpuletPerBackend>(
          i++ % 2 == 0 ? "second" : "first"));
    }
  });
  std::set<std::string> seen;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(coordinator->PlanAndApply("admin").ok());
    const Plan plan = coordinator->current_plan();
    EXPECT_TRUE(plan.policy() == "first" || plan.policy() == "second");
    seen.insert(plan.policy());
  }
  done = true;
  switcher.join();
  EXPECT_EQ(coordinator->current_plan().epoch(), 20);
  EXPECT_EQ(coordinator->policy()->name() == "first" ||
                coordinator->policy()->name() == "second",
            true);
}

// The control loops: a requested plan is made, and a backend that stops
// answering heartbeats is planned around.
TEST_F(PlanCoordinatorTest, ControlLoopsPlanOnRequestAndAroundALostBackend) {
  auto coordinator = MakeCoordinator(2);
  std::vector<BackendControl*> controls;
  for (auto& b : backends_) controls.push_back(b.get());
  ControlLoops loops(
      ControlLoops::Options{absl::Hours(1), absl::Milliseconds(10),
                            absl::Milliseconds(10)},
      ControlLoops::Deps{coordinator.get(), trigger_.get(), &monitor_, &router_,
                         controls, RealClock::Get()});
  trigger_->Request("initial plan");
  loops.Start();
  ASSERT_TRUE(coordinator->WaitForPlan(absl::Seconds(30)));
  EXPECT_EQ(coordinator->current_plan().devices_size(), 2);

  backends_[1]->SetDown(true);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (coordinator->current_plan().epoch() < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const Plan plan = coordinator->current_plan();
  EXPECT_EQ(plan.epoch(), 2);
  EXPECT_EQ(plan.devices_size(), 1);
  EXPECT_THAT(plan.reason(), HasSubstr("backend 'b1' lost"));
  loops.Stop();
  EXPECT_FALSE(trigger_->Alive("b1"));
}

}  // namespace
}  // namespace tessera
