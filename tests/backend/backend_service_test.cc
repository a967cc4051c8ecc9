// BackendServiceImpl's plan changes on in-memory proxies: which proxies a
// plan starts, keeps, retires and stops, and where batches go meanwhile.
#include "backend/backend_service.h"

#include <thread>

#include <functional>
#include <memory>

#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/fake_proxy.h"
#include "tests/common/temp_model_repository.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using testing::FakeLauncher;
using testing::FakeProxy;
using ::testing::HasSubstr;
using testing::TempModelRepository;

class BackendServiceTest : public ::testing::Test {
 protected:
  std::unique_ptr<BackendServiceImpl> MakeCpuBackend(
      const std::function<void(BackendServiceImpl::Options*)>& tweak =
          nullptr) {
    BackendServiceImpl::Options options;
    options.config.set_id("b0");
    DeviceConfig* cpu = options.config.add_devices();
    cpu->set_id("cpu0");
    cpu->set_kind(DEVICE_KIND_CPU);
    for (int c : {0, 1, 2, 3}) cpu->add_cpu_cores(c);
    options.model_repository = repo_.root();
    options.proxies.launcher = launcher_;
    if (tweak) tweak(&options);
    auto backend = BackendServiceImpl::Create(options);
    EXPECT_TRUE(backend.ok()) << backend.status();
    return backend.ok() ? std::move(*backend) : nullptr;
  }

  // A backend whose supervisor the test drives (HealExitedProxies) on
  // `clock_`, serving gpulet g1 (model m) under plan epoch 1.
  std::unique_ptr<BackendServiceImpl> MakeHealingBackend(int max_restarts = 5,
                                                         int max_parked = 64) {
    auto backend = MakeCpuBackend([&](BackendServiceImpl::Options* o) {
      o->supervise_period = absl::Hours(1);  // never on its own
      o->clock = &clock_;
      o->restart.max_restarts = max_restarts;
      o->parking.max_per_gpulet = max_parked;
    });
    if (backend == nullptr) return nullptr;
    Plan plan;
    AddGpulet(OnDevice(&plan, 1, "cpu0"), "g1", 50, {"m"});
    ApplyPlanRequest request;
    *request.mutable_plan() = plan;
    ApplyPlanResponse response;
    EXPECT_TRUE(backend->ApplyPlan(nullptr, &request, &response).ok());
    return backend;
  }

  // A batch's answer, once it comes.
  struct Answer {
    bool answered = false;
    BatchResponse response;
  };
  static std::shared_ptr<Answer> Submit(BackendServiceImpl* backend,
                                        const std::string& gpulet,
                                        double deadline_budget_ms = 0) {
    BatchRequest batch;
    batch.set_gpulet_id(gpulet);
    batch.set_model("m");
    batch.set_deadline_budget_ms(deadline_budget_ms);
    auto answer = std::make_shared<Answer>();
    backend->Route(std::move(batch), [answer](BatchResponse r) {
      answer->response = std::move(r);
      answer->answered = true;
    });
    return answer;
  }

  // Sets `plan` to epoch `epoch` on device `device_id` of backend b0 and
  // returns that device's plan, for gpulets to be added.
  static DevicePlan* OnDevice(Plan* plan, int64_t epoch,
                              const std::string& device_id) {
    plan->Clear();
    plan->set_epoch(epoch);
    DevicePlan* dp = plan->add_devices();
    dp->set_backend_id("b0");
    dp->set_device_id(device_id);
    return dp;
  }

  static void AddGpulet(DevicePlan* dp, const std::string& id, double share,
                        std::vector<std::string> models) {
    GpuletPlan* g = dp->add_gpulets();
    g->set_gpulet_id(id);
    g->set_share_percent(share);
    for (const std::string& m : models) {
      ModelAssignment* a = g->add_models();
      a->set_model(m);
      a->set_batch_size(4);
    }
  }

  // Sends one batch of `model` to `gpulet` and returns the response (the
  // fakes answer inline).
  static BatchResponse Send(BackendServiceImpl* backend,
                            const std::string& gpulet,
                            const std::string& model = "m") {
    BatchRequest batch;
    batch.set_gpulet_id(gpulet);
    batch.set_model(model);
    batch.set_batch_id(7);
    BatchResponse out;
    bool answered = false;
    backend->Route(std::move(batch), [&](BatchResponse r) {
      out = std::move(r);
      answered = true;
    });
    EXPECT_TRUE(answered);
    return out;
  }

  static absl::StatusCode Code(const BatchResponse& r) {
    return static_cast<absl::StatusCode>(r.status().code());
  }

  TempModelRepository repo_{{"m", "n"}};
  std::shared_ptr<FakeLauncher> launcher_ = std::make_shared<FakeLauncher>();
  FakeClock clock_;
};

TEST_F(BackendServiceTest, ReplanKeepsSwapsRetiresAndCommitStops) {
  auto backend = MakeCpuBackend();
  ASSERT_NE(backend, nullptr);
  Plan plan;
  DevicePlan* dp = OnDevice(&plan, 1, "cpu0");
  AddGpulet(dp, "g0", 25, {"m"});
  AddGpulet(dp, "g1", 25, {"n"});
  AddGpulet(dp, "g2", 50, {"m"});
  ApplyPlanRequest request;
  *request.mutable_plan() = plan;
  ApplyPlanResponse response;
  ASSERT_TRUE(backend->ApplyPlan(nullptr, &request, &response).ok());
  EXPECT_EQ(response.started(), 3);
  ASSERT_EQ(response.gpulets_size(), 3);
  EXPECT_THAT(response.gpulets(2).cpu_cores(), ElementsAre(2, 3));
  std::shared_ptr<FakeProxy> g0 = launcher_->Last("g0"),
                             g1 = launcher_->Last("g1"),
                             g2 = launcher_->Last("g2");
  EXPECT_THAT(launcher_->Last("g2")->gpulet_id(), "g2");
  // What each proxy is told: its cores, threads and models.
  for (const auto& launched : launcher_->launched()) {
    const ProxyConfig& c = launched.options.config;
    EXPECT_EQ(c.device_kind(), DEVICE_KIND_CPU);
    EXPECT_EQ(c.models_size(), 1);
    EXPECT_EQ(c.threads(), c.cpu_cores_size());
    if (c.gpulet_id() == "g2") EXPECT_THAT(c.cpu_cores(), ElementsAre(2, 3));
  }
  EXPECT_THAT(response.gpulets(2).proxy_config().cpu_cores(),
              ElementsAre(2, 3));

  // Epoch 2 keeps g0, gives g1 another model set and drops g2.
  Plan next;
  DevicePlan* nd = OnDevice(&next, 2, "cpu0");
  AddGpulet(nd, "g0", 25, {"m"});
  AddGpulet(nd, "g1", 25, {"m", "n"});
  *request.mutable_plan() = next;
  ASSERT_TRUE(backend->ApplyPlan(nullptr, &request, &response).ok());
  EXPECT_EQ(response.started(), 1);
  EXPECT_EQ(launcher_->launched().size(), 4u);
  std::shared_ptr<FakeProxy> g1b = launcher_->Last("g1");
  ASSERT_NE(g1b, g1);

  // Until the commit: g0 as before, g1 to its new proxy, g2 still drains.
  EXPECT_EQ(Code(Send(backend.get(), "g0")), absl::StatusCode::kOk);
  EXPECT_EQ(Code(Send(backend.get(), "g1")), absl::StatusCode::kOk);
  EXPECT_EQ(Code(Send(backend.get(), "g2")), absl::StatusCode::kOk);
  EXPECT_EQ(g0->batches(), 1);
  EXPECT_EQ(g1->batches(), 0);
  EXPECT_EQ(g1b->batches(), 1);
  EXPECT_EQ(g2->batches(), 1);
  HealthResponse health;
  ASSERT_TRUE(backend->Health(nullptr, nullptr, &health).ok());
  EXPECT_EQ(health.num_proxies(), 4);

  // A stale commit is refused; the right one stops the old g1 and g2.
  CommitPlanRequest commit;
  CommitPlanResponse committed;
  commit.set_epoch(1);
  grpc::Status stale = backend->CommitPlan(nullptr, &commit, &committed);
  EXPECT_EQ(stale.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  commit.set_epoch(2);
  ASSERT_TRUE(backend->CommitPlan(nullptr, &commit, &committed).ok());
  std::vector<std::string> stopped(committed.stopped_gpulets().begin(),
                                   committed.stopped_gpulets().end());
  std::sort(stopped.begin(), stopped.end());
  EXPECT_THAT(stopped, ElementsAre("g1", "g2"));
  EXPECT_TRUE(g1->stopped());
  EXPECT_TRUE(g2->stopped());
  EXPECT_FALSE(g0->stopped());
  EXPECT_FALSE(g1b->stopped());
  BatchResponse gone = Send(backend.get(), "g2");
  EXPECT_EQ(Code(gone), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(gone.gpulet_stopped());
  ASSERT_TRUE(backend->Health(nullptr, nullptr, &health).ok());
  EXPECT_EQ(health.num_proxies(), 2);
  EXPECT_TRUE(health.ready());
}

// A gpulet the plan keeps with fewer models keeps its proxy, which drops
// the others only at the commit: until then the frontend still routes by
// the old plan and may send them.
TEST_F(BackendServiceTest, AKeptGpuletDropsItsUnloadedModelsAtTheCommit) {
  auto backend = MakeCpuBackend();
  ASSERT_NE(backend, nullptr);
  Plan plan;
  AddGpulet(OnDevice(&plan, 1, "cpu0"), "g0", 50, {"m", "n"});
  ApplyPlanRequest request;
  *request.mutable_plan() = plan;
  ApplyPlanResponse response;
  ASSERT_TRUE(backend->ApplyPlan(nullptr, &request, &response).ok());
  std::shared_ptr<FakeProxy> g0 = launcher_->Last("g0");

  AddGpulet(OnDevice(request.mutable_plan(), 2, "cpu0"), "g0", 50, {"m"});
  ASSERT_TRUE(backend->ApplyPlan(nullptr, &request, &response).ok());
  EXPECT_EQ(response.started(), 0);
  EXPECT_EQ(launcher_->Last("g0"), g0);  // the same proxy
  EXPECT_TRUE(g0->dropped().empty());
  EXPECT_EQ(Code(Send(backend.get(), "g0", "n")), absl::StatusCode::kOk);

  CommitPlanRequest commit;
  CommitPlanResponse committed;
  commit.set_epoch(2);
  ASSERT_TRUE(backend->CommitPlan(nullptr, &commit, &committed).ok());
  EXPECT_THAT(g0->dropped(), ElementsAre("n"));
  EXPECT_EQ(Code(Send(backend.get(), "g0", "n")), absl::StatusCode::kNotFound);
  EXPECT_EQ(Code(Send(backend.get(), "g0", "m")), absl::StatusCode::kOk);
}

TEST_F(BackendServiceTest, FailedStartKeepsThePlanInForce) {
  auto backend = MakeCpuBackend();
  ASSERT_NE(backend, nullptr);
  ApplyPlanRequest request;
  ApplyPlanResponse response;
  Plan* plan = request.mutable_plan();
  DevicePlan* dp = OnDevice(plan, 1, "cpu0");
  AddGpulet(dp, "g0", 100, {"m"});
  ASSERT_TRUE(backend->ApplyPlan(nullptr, &request, &response).ok());
  std::shared_ptr<FakeProxy> g0 = launcher_->Last("g0");

  launcher_->FailFor("bad");
  plan->set_epoch(2);
  dp->clear_gpulets();
  AddGpulet(dp, "g0", 50, {"m"});
  AddGpulet(dp, "bad", 50, {"n"});
  grpc::Status failed = backend->ApplyPlan(nullptr, &request, &response);
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // The new g0 that did start is stopped again; the old one serves on.
  std::shared_ptr<FakeProxy> g0b = launcher_->Last("g0");
  ASSERT_NE(g0b, g0);
  EXPECT_TRUE(g0b->stopped());
  EXPECT_FALSE(g0->stopped());
  EXPECT_EQ(Code(Send(backend.get(), "g0")), absl::StatusCode::kOk);
  EXPECT_EQ(g0->batches(), 1);
  HealthResponse health;
  ASSERT_TRUE(backend->Health(nullptr, nullptr, &health).ok());
  EXPECT_EQ(health.epoch(), 1);
}

TEST_F(BackendServiceTest, RejectsPlansItCannotServe) {
  auto backend = MakeCpuBackend();
  ASSERT_NE(backend, nullptr);
  ApplyPlanRequest request;
  ApplyPlanResponse response;
  DevicePlan* dp = OnDevice(request.mutable_plan(), 0, "gpu9");
  AddGpulet(dp, "g0", 100, {"m"});
  grpc::Status s = backend->ApplyPlan(nullptr, &request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("gpu9"));

  dp->set_device_id("cpu0");
  dp->clear_gpulets();
  AddGpulet(dp, "g0", 100, {"nope"});
  s = backend->ApplyPlan(nullptr, &request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("nope"));

  dp->clear_gpulets();
  AddGpulet(dp, "g0", 0, {"m"});
  s = backend->ApplyPlan(nullptr, &request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(launcher_->launched().empty());
}

// An emulated device too small for a shadow: the old proxy stops before the
// new one starts, and a batch caught in between is told to retry.
TEST_F(BackendServiceTest, StopThenStartWhereShadowsDoNotFit) {
  BackendServiceImpl::Options options;
  options.config.set_id("b0");
  options.config.set_profile_dir(std::string(TESSERA_SOURCE_DIR) + "/profiles");
  DeviceConfig* gpu = options.config.add_devices();
  gpu->set_id("gpu0");
  gpu->set_kind(DEVICE_KIND_EMULATED);
  gpu->set_memory_bytes(int64_t{3} << 30);  // one resnet50 (1.8 GiB) fits
  options.model_repository =
      std::string(TESSERA_SOURCE_DIR) + "/configs/emulated/models";
  options.proxies.launcher = launcher_;
  auto backend = BackendServiceImpl::Create(options);
  ASSERT_TRUE(backend.ok()) << backend.status();

  ApplyPlanRequest request;
  ApplyPlanResponse response;
  Plan* plan = request.mutable_plan();
  DevicePlan* dp = OnDevice(plan, 1, "gpu0");
  AddGpulet(dp, "g0", 50, {"resnet50"});
  AddGpulet(dp, "g1", 50, {"lenet"});
  ASSERT_TRUE((*backend)->ApplyPlan(nullptr, &request, &response).ok());
  std::shared_ptr<FakeProxy> g0 = launcher_->Last("g0");
  const ProxyConfig sent = launcher_->launched()[0].options.config;
  EXPECT_EQ(sent.device_kind(), DEVICE_KIND_EMULATED);
  EXPECT_EQ(sent.emulated().share_percent(), 50);
  EXPECT_EQ(sent.emulated().time_scale(), 1);
  EXPECT_EQ(sent.poll_window_us(), 0);  // emulated proxies never poll
  // Each emulated proxy learns its neighbour's slowdown.
  EXPECT_EQ(g0->factors().count("resnet50"), 1u);

  plan->set_epoch(2);
  dp->mutable_gpulets(0)->set_share_percent(40);
  ASSERT_TRUE((*backend)->ApplyPlan(nullptr, &request, &response).ok());
  EXPECT_EQ(response.started(), 1);
  EXPECT_EQ(response.stop_then_start(), 1);
  EXPECT_TRUE(g0->stopped());
  EXPECT_FALSE(launcher_->Last("g1")->stopped());

  // A batch the frontend sent to the old g0 now reaches the new one; one
  // the old proxy failed would carry gpulet_stopped.
  EXPECT_EQ(Code(Send(backend->get(), "g0")), absl::StatusCode::kOk);
  EXPECT_EQ(launcher_->Last("g0")->batches(), 1);
  HealthResponse health;
  ASSERT_TRUE((*backend)->Health(nullptr, nullptr, &health).ok());
  EXPECT_EQ(health.stop_then_start_swaps(), 1);
  EXPECT_EQ(health.num_proxies(), 2);
}

TEST_F(BackendServiceTest, AnExitedProxysBatchesWaitForItsRestart) {
  auto backend = MakeHealingBackend();
  ASSERT_NE(backend, nullptr);
  std::shared_ptr<FakeProxy> first = launcher_->Last("g1");
  first->Stop(absl::ZeroDuration());  // the proxy process exits
  auto held = Submit(backend.get(), "g1");
  EXPECT_FALSE(held->answered);  // held, not failed

  backend->HealExitedProxies();
  std::shared_ptr<FakeProxy> second = launcher_->Last("g1");
  ASSERT_NE(second, first);
  ASSERT_TRUE(held->answered);
  EXPECT_EQ(Code(held->response), absl::StatusCode::kOk);
  EXPECT_EQ(second->batches(), 1);
  EXPECT_EQ(first->batches(), 0);
}

TEST_F(BackendServiceTest,
       AHeldBatchPastItsDeadlineIsAnsweredDeadlineExceeded) {
  auto backend = MakeHealingBackend();
  ASSERT_NE(backend, nullptr);
  launcher_->Last("g1")->Stop(absl::ZeroDuration());
  auto short_budget = Submit(backend.get(), "g1", /*deadline_budget_ms=*/50);
  auto long_budget = Submit(backend.get(), "g1", /*deadline_budget_ms=*/5000);
  clock_.Advance(absl::Milliseconds(100));
  backend
      ->HealExitedProxies();  // expires the first, restarts, routes the other
  ASSERT_TRUE(short_budget->answered);
  EXPECT_EQ(Code(short_budget->response), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(long_budget->answered);
  EXPECT_EQ(Code(long_budget->response), absl::StatusCode::kOk);
}

TEST_F(BackendServiceTest,
       BatchesHeldForARestartTheBudgetRefusesAreUnavailable) {
  auto backend = MakeHealingBackend(/*max_restarts=*/0);
  ASSERT_NE(backend, nullptr);
  std::shared_ptr<FakeProxy> only = launcher_->Last("g1");
  only->Stop(absl::ZeroDuration());
  auto held = Submit(backend.get(), "g1");
  EXPECT_FALSE(held->answered);
  backend->HealExitedProxies();  // gives up
  EXPECT_EQ(launcher_->Last("g1"), only);
  ASSERT_TRUE(held->answered);
  EXPECT_EQ(Code(held->response), absl::StatusCode::kUnavailable);
  EXPECT_THAT(held->response.status().message(), HasSubstr("keeps exiting"));
  // From now on nothing is held for it, and the frontend is not told to
  // route again (the gpulet stays down until the next plan).
  auto later = Submit(backend.get(), "g1");
  ASSERT_TRUE(later->answered);
  EXPECT_EQ(Code(later->response), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(later->response.gpulet_stopped());
}

TEST_F(BackendServiceTest, ABatchThatCannotBeHeldTellsTheFrontendToRouteAgain) {
  auto backend = MakeHealingBackend(/*max_restarts=*/5, /*max_parked=*/0);
  ASSERT_NE(backend, nullptr);
  launcher_->Last("g1")->Stop(absl::ZeroDuration());
  // As for a batch in flight when the proxy exited: UNAVAILABLE, marked so
  // that the frontend routes its calls again.
  auto refused = Submit(backend.get(), "g1");
  ASSERT_TRUE(refused->answered);
  EXPECT_EQ(Code(refused->response), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(refused->response.gpulet_stopped());
}

// Draining, the backend takes no new gpulets and leaves only once the
// frontend's heartbeat says a settled plan at least as new as its own
// routes nothing to it.
TEST_F(BackendServiceTest, ADrainingBackendWaitsForAPlanThatLeavesItOut) {
  auto backend = MakeCpuBackend(
      [&](BackendServiceImpl::Options* o) { o->clock = &clock_; });
  ASSERT_NE(backend, nullptr);
  Plan plan;
  AddGpulet(OnDevice(&plan, 1, "cpu0"), "g0", 25, {"m"});
  ApplyPlanRequest request;
  *request.mutable_plan() = plan;
  ApplyPlanResponse response;
  ASSERT_TRUE(backend->ApplyPlan(nullptr, &request, &response).ok());
  // SIGTERM (the deadline already passed: this only marks it draining).
  EXPECT_FALSE(backend->AwaitFrontendLeft(absl::ZeroDuration(),
                                          absl::Seconds(5), clock_.Now()));
  HealthResponse health;
  ASSERT_TRUE(backend->Health(nullptr, nullptr, &health).ok());
  EXPECT_TRUE(health.draining());

  // A plan made before the frontend saw the drain is refused.
  AddGpulet(OnDevice(request.mutable_plan(), 2, "cpu0"), "g1", 25, {"m"});
  EXPECT_EQ(backend->ApplyPlan(nullptr, &request, &response).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  // UNROUTED by a plan older than the one applied here: not gone.
  HealthRequest heartbeat;
  heartbeat.set_routing(HealthRequest::ROUTING_UNROUTED);
  heartbeat.set_settled_epoch(0);
  ASSERT_TRUE(backend->Health(nullptr, &heartbeat, &health).ok());
  std::thread later([&] {
    absl::SleepFor(absl::Milliseconds(100));
    clock_.Advance(absl::Seconds(2));
  });
  EXPECT_FALSE(backend->AwaitFrontendLeft(
      absl::ZeroDuration(), absl::Seconds(5), clock_.Now() + absl::Seconds(1)));
  later.join();

  // The plan without it is applied; its heartbeat lets the backend go.
  request.mutable_plan()->Clear();
  request.mutable_plan()->set_epoch(2);
  ASSERT_TRUE(backend->ApplyPlan(nullptr, &request, &response).ok());
  heartbeat.set_settled_epoch(2);
  ASSERT_TRUE(backend->Health(nullptr, &heartbeat, &health).ok());
  EXPECT_TRUE(backend->AwaitFrontendLeft(absl::ZeroDuration(), absl::Seconds(5),
                                         clock_.Now() + absl::Seconds(1)));
}

TEST_F(BackendServiceTest, StoppingAnswersHeldBatches) {
  auto backend = MakeHealingBackend();
  ASSERT_NE(backend, nullptr);
  launcher_->Last("g1")->Stop(absl::ZeroDuration());
  auto held = Submit(backend.get(), "g1");
  EXPECT_FALSE(held->answered);
  backend->StopProxies();
  ASSERT_TRUE(held->answered);
  EXPECT_EQ(Code(held->response), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera
