#include "frontend/replan_trigger.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

ReplanTrigger MakeTrigger() {
  ReplanTrigger::Options options;
  options.replan_threshold = 0.2;
  options.min_rate_rps = 1;
  options.rate_window_s = 10;
  options.heartbeat_misses = 3;
  return ReplanTrigger(options, {"b0", "b1"});
}

TEST(ReplanTriggerTest, FirstReasonStandsUntilItsPlanSucceeds) {
  ReplanTrigger trigger = MakeTrigger();
  EXPECT_EQ(trigger.Pending(), "");
  trigger.Request("initial plan");
  trigger.Request("admin");  // one reason at a time: the first stands
  EXPECT_EQ(trigger.Pending(), "initial plan");

  trigger.Finished(trigger.Take(), /*ok=*/false);
  EXPECT_EQ(trigger.Pending(), "initial plan");  // retried
  trigger.Finished(trigger.Take(), /*ok=*/true);
  EXPECT_EQ(trigger.Pending(), "");

  // A policy switch during planning replaces the reason; the plan made
  // for the old one does not clear it.
  trigger.Request("rate change");
  const ReplanTrigger::Taken rates = trigger.Take();
  trigger.Override("policy switched to 'sbp'");
  trigger.Finished(rates, /*ok=*/true);
  EXPECT_EQ(trigger.Pending(), "policy switched to 'sbp'");
}

// A plan reads the cluster when it starts: a backend found draining or
// lost while it is made stays pending, or the frontend would keep routing
// to that backend until something else asked for a plan.
TEST(ReplanTriggerTest, ARequestMadeWhilePlanningAsksForAnotherPlan) {
  ReplanTrigger trigger = MakeTrigger();
  trigger.Request("rate change: lenet 1.0 -> 100.0 req/s");
  const ReplanTrigger::Taken rates = trigger.Take();
  trigger.OnDraining("b1");  // while the rate change is planned
  trigger.Request("admin");
  EXPECT_EQ(trigger.Pending(), "rate change: lenet 1.0 -> 100.0 req/s");
  trigger.Finished(rates, /*ok=*/true);
  EXPECT_EQ(trigger.Pending(), "admin");  // the latest of the two
  trigger.Finished(trigger.Take(), /*ok=*/true);
  EXPECT_EQ(trigger.Pending(), "");

  // Asked before the planner took its reason: that plan serves it.
  trigger.Request("model 'lenet' loaded");
  trigger.Request("admin");
  trigger.Finished(trigger.Take(), /*ok=*/true);
  EXPECT_EQ(trigger.Pending(), "");

  // A failed plan keeps its own reason.
  trigger.Request("backend 'b0' lost");
  const ReplanTrigger::Taken lost = trigger.Take();
  trigger.Request("admin");
  trigger.Finished(lost, /*ok=*/false);
  EXPECT_EQ(trigger.Pending(), "backend 'b0' lost");
}

TEST(ReplanTriggerTest, HeartbeatsLoseRestoreAndCatchARestartedBackend) {
  ReplanTrigger trigger = MakeTrigger();
  const absl::Status down = absl::UnavailableError("connection refused");
  trigger.OnHeartbeat("b1", down, 0, 4);
  trigger.OnHeartbeat("b1", down, 0, 4);
  EXPECT_TRUE(trigger.Alive("b1"));  // two misses of three
  EXPECT_EQ(trigger.Pending(), "");
  trigger.OnHeartbeat("b1", down, 0, 4);
  EXPECT_FALSE(trigger.Alive("b1"));
  EXPECT_EQ(trigger.Pending(), "backend 'b1' lost");
  EXPECT_THAT(trigger.AliveBackends(),
              ElementsAre(Pair("b0", true), Pair("b1", false)));
  trigger.Finished(trigger.Take(), true);

  trigger.OnHeartbeat("b1", absl::OkStatus(), 0, 5);
  EXPECT_TRUE(trigger.Alive("b1"));
  EXPECT_EQ(trigger.Pending(), "backend 'b1' back");
  trigger.Finished(trigger.Take(), true);

  // Alive, but at an older epoch than the plan in force: restarted.
  trigger.OnHeartbeat("b0", absl::OkStatus(), 5, 6);
  EXPECT_EQ(trigger.Pending(), "backend 'b0' lost its plan");
  trigger.Finished(trigger.Take(), true);
  // No plan to compare with (none yet, or one being applied): nothing.
  trigger.OnHeartbeat("b0", absl::OkStatus(), 5, 0);
  trigger.OnHeartbeat("b0", absl::OkStatus(), 6, 6);
  EXPECT_EQ(trigger.Pending(), "");
  EXPECT_FALSE(trigger.Alive("b9"));  // not configured
}

TEST(ReplanTriggerTest, ADrainingBackendIsPlannedAroundAtOnce) {
  ReplanTrigger trigger = MakeTrigger();
  trigger.OnDraining("b1");  // no missed heartbeats needed
  EXPECT_FALSE(trigger.Alive("b1"));
  EXPECT_EQ(trigger.Pending(), "backend 'b1' draining");
  trigger.Finished(trigger.Take(), true);
  trigger.OnDraining("b1");  // still draining: nothing new
  EXPECT_EQ(trigger.Pending(), "");
  EXPECT_FALSE(trigger.Alive("b1"));
  // Restarted: answers without draining.
  trigger.OnHeartbeat("b1", absl::OkStatus(), 0, 0);
  EXPECT_TRUE(trigger.Alive("b1"));
  EXPECT_EQ(trigger.Pending(), "backend 'b1' back");
}

TEST(ReplanTriggerTest, RatesReplanOnlyOnSignificantChangeOverEnoughWindow) {
  ReplanTrigger trigger = MakeTrigger();
  trigger.SetPlannedRates({{"m", 100}});
  // +50 % but measured over a tenth of the window: too noisy.
  EXPECT_FALSE(trigger.CheckRates({{"m", 150}}, 0.1));
  // +5 %: within the threshold.
  EXPECT_FALSE(trigger.CheckRates({{"m", 105}}, 1.0));
  EXPECT_EQ(trigger.Pending(), "");
  EXPECT_TRUE(trigger.CheckRates({{"m", 150}}, 1.0));
  EXPECT_THAT(trigger.Pending(), HasSubstr("rate change"));
  EXPECT_THAT(trigger.Pending(), HasSubstr("m"));
  EXPECT_THAT(trigger.PlannedRates(), ElementsAre(Pair("m", 100)));
}

TEST(ReplanTriggerTest, RisesReplanOverTheShortWindowFallsDoNot) {
  ReplanTrigger trigger = MakeTrigger();
  trigger.SetPlannedRates({{"m", 100}, {"n", 100}});
  // A fall, however large, waits for CheckRates.
  EXPECT_FALSE(trigger.CheckRises({{"m", 10}, {"n", 100}}, 2));
  // +10 %: within the threshold.
  EXPECT_FALSE(trigger.CheckRises({{"m", 110}}, 2));
  EXPECT_EQ(trigger.Pending(), "");
  EXPECT_TRUE(trigger.CheckRises({{"m", 10}, {"n", 300}}, 2));
  EXPECT_THAT(trigger.Pending(), HasSubstr("rate rise: n"));
}

TEST(ReplanTriggerTest, WaitReturnsOnARequestOrStop) {
  ReplanTrigger trigger = MakeTrigger();
  const absl::Time start = absl::Now();
  trigger.WaitForRequest(absl::Milliseconds(20));  // times out
  // (absl's timed wait may wake a fraction of a millisecond early: 19.7
  // ms measured on a loaded machine.)
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(15));

  std::thread asker([&] {
    absl::SleepFor(absl::Milliseconds(20));
    trigger.Request("admin");
  });
  trigger.WaitForRequest(absl::Seconds(30));
  EXPECT_EQ(trigger.Pending(), "admin");
  asker.join();

  trigger.Finished(trigger.Take(), true);
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(20));
    trigger.Stop();
  });
  const absl::Time before = absl::Now();
  trigger.WaitForRequest(absl::Seconds(30));
  EXPECT_LT(absl::Now() - before, absl::Seconds(20));
  stopper.join();
}

}  // namespace
}  // namespace tessera
