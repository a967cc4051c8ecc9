// PlanCoordinator on in-memory backends: plans are applied and committed on
// every live backend at once, a refusal rolls back those that accepted, and
// the policy can be switched while plans are made.
#include "frontend/plan_coordinator.h"

#include "frontend/control_loops.h"

#include <atomic>
#include <limits>
#include <memory>
#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontend/fake_backend.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::FakeBackend;
using testing::OneGpuletPerBackend;

class PlanCoordinatorTest : public testing::PlanCoordinatorFixture {
 protected:
  // Control loops over every backend (rate checks hourly, heartbeats and
  // plan retries every 10 ms), started to make the initial plan.
  std::unique_ptr<ControlLoops> StartLoops(PlanCoordinator* coordinator) {
    std::vector<BackendControl*> controls;
    for (auto& b : backends_) controls.push_back(b.get());
    auto loops = std::make_unique<ControlLoops>(
        ControlLoops::Options{absl::Hours(1), absl::Milliseconds(10),
                              absl::Milliseconds(10)},
        ControlLoops::Deps{coordinator, trigger_.get(), &monitor_, &router_,
                           controls, RealClock::Get()});
    trigger_->Request("initial plan");
    loops->Start();
    return loops;
  }
};

TEST_F(PlanCoordinatorTest, AppliesOnEveryBackendAtOnceThenCommits) {
  // Each fake waits in GetNodeInfo, and then in ApplyPlan, until all four
  // are in it: asked or applied one after another, the first would give up
  // after 30 s and fail the plan.
  auto coordinator = MakeCoordinator(4, /*overlap=*/true);
  ASSERT_TRUE(coordinator->PlanAndApply("initial plan").ok());
  for (const auto& b : backends_) {
    EXPECT_THAT(b->applied(), ElementsAre(1)) << b->id();
    EXPECT_THAT(b->committed(), ElementsAre(1)) << b->id();
  }
  const Plan plan = coordinator->current_plan();
  EXPECT_EQ(plan.epoch(), 1);
  EXPECT_EQ(plan.devices_size(), 4);
  for (int i = 0; i < 4; ++i) {  // the nodes in the order of the config
    EXPECT_EQ(plan.devices(i).backend_id(), "b" + std::to_string(i));
  }
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

// Nodes are asked at once but planned in the order the backends were given
// (the config's), not in the order they answer or by id.
TEST_F(PlanCoordinatorTest, NodesArePlannedInTheOrderOfTheBackends) {
  auto coordinator = MakeCoordinator(3);
  coordinator->SetBackends(
      {backends_[2].get(), backends_[0].get(), backends_[1].get()});
  ASSERT_TRUE(coordinator->PlanAndApply("initial plan").ok());
  const Plan plan = coordinator->current_plan();
  ASSERT_EQ(plan.devices_size(), 3);
  EXPECT_EQ(plan.devices(0).backend_id(), "b2");
  EXPECT_EQ(plan.devices(1).backend_id(), "b0");
  EXPECT_EQ(plan.devices(2).backend_id(), "b1");
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
  auto loops = StartLoops(coordinator.get());
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
  loops->Stop();
  EXPECT_FALSE(trigger_->Alive("b1"));
}

// A draining backend is planned around, and the heartbeats then tell it
// that the plan in force routes nothing to it (it may exit), while the
// other backend hears it is routed.
TEST_F(PlanCoordinatorTest, HeartbeatsTellADrainingBackendItIsNoLongerRouted) {
  auto coordinator = MakeCoordinator(2);
  // Before any plan, nothing is routed anywhere.
  EXPECT_EQ(coordinator->Heartbeat("b1").routing(),
            HealthRequest::ROUTING_UNROUTED);
  auto loops = StartLoops(coordinator.get());
  ASSERT_TRUE(coordinator->WaitForPlan(absl::Seconds(30)));
  EXPECT_EQ(coordinator->Heartbeat("b1").routing(),
            HealthRequest::ROUTING_ROUTED);

  backends_[1]->SetDraining();
  auto told = [&] {
    const std::vector<HealthRequest> sent = backends_[1]->health_requests();
    return !sent.empty() &&
           sent.back().routing() == HealthRequest::ROUTING_UNROUTED;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!told() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  loops->Stop();
  ASSERT_TRUE(told());
  const Plan plan = coordinator->current_plan();
  EXPECT_EQ(plan.epoch(), 2);
  EXPECT_THAT(plan.reason(), HasSubstr("backend 'b1' draining"));
  EXPECT_EQ(backends_[1]->health_requests().back().settled_epoch(), 2);
  EXPECT_EQ(backends_[0]->health_requests().back().routing(),
            HealthRequest::ROUTING_ROUTED);
  // Every heartbeat said something: none left the routing unspecified.
  for (const HealthRequest& r : backends_[1]->health_requests()) {
    EXPECT_NE(r.routing(), HealthRequest::ROUTING_UNSPECIFIED);
  }
}

// At shutdown every backend, alive or not, hears that nothing is routed
// to it by any plan of this frontend.
TEST_F(PlanCoordinatorTest, FarewellTellsEveryBackendItIsNoLongerRouted) {
  auto coordinator = MakeCoordinator(2);
  ASSERT_TRUE(coordinator->PlanAndApply("initial plan").ok());
  backends_[1]->SetDown(true);  // still told; its answer does not matter
  coordinator->SayFarewell(absl::Seconds(1));
  for (const auto& b : backends_) {
    const std::vector<HealthRequest> sent = b->health_requests();
    ASSERT_EQ(sent.size(), 1u) << b->id();
    EXPECT_EQ(sent[0].routing(), HealthRequest::ROUTING_UNROUTED);
    EXPECT_EQ(sent[0].settled_epoch(), std::numeric_limits<int64_t>::max());
  }
}

// With a rise window the planner re-plans a rise at once (the replan
// period here is an hour) and plans for the short window's rate, which the
// 10 s rate window still averages down. Rates run on a fake clock.
TEST_F(PlanCoordinatorTest, ControlLoopsReplanARiseForTheShortWindowsRate) {
  FakeClock clock;
  RequestMonitor monitor({absl::Seconds(10), 20}, &clock);
  auto coordinator =
      MakeCoordinator(1, /*overlap=*/false, /*rise_window_s=*/2, &monitor);
  std::vector<BackendControl*> controls = {backends_[0].get()};
  ControlLoops loops(
      ControlLoops::Options{absl::Hours(1), absl::Milliseconds(10),
                            absl::Milliseconds(10), absl::Seconds(2)},
      ControlLoops::Deps{coordinator.get(), trigger_.get(), &monitor, &router_,
                         controls, &clock});
  trigger_->Request("initial plan");
  loops.Start();
  ASSERT_TRUE(coordinator->WaitForPlan(absl::Seconds(30)));
  // 8 s without traffic, then 100 calls of m and 1 s more: about 11 req/s
  // over the rate window, 50-67 over the last 2 s.
  clock.Advance(absl::Seconds(8));
  for (int i = 0; i < 100; ++i) monitor.Record("m");
  clock.Advance(absl::Seconds(1));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (coordinator->current_plan().epoch() < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  loops.Stop();
  const Plan plan = coordinator->current_plan();
  ASSERT_EQ(plan.epoch(), 2);
  EXPECT_THAT(plan.reason(), HasSubstr("rate rise: m"));
  const double window = monitor.Rates().at("m");
  EXPECT_NEAR(window, 100.0 / 9, 1);
  EXPECT_GT(trigger_->PlannedRates().at("m"), 4 * window);
}

}  // namespace
}  // namespace tessera
