#include "scheduler/plan_check.h"

#include "gtest/gtest.h"
#include "scheduler/planning_rules.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using testing::LinearProfile;
using testing::Snapshot;

PolicyOptions Paper() {
  PolicyOptions o;
  o.rules = PresetRules(RULES_PRESET_PAPER);
  return o;
}

// y on two gpulets of b0/gpu0: 40 % planned for 300 req/s and 20 % for
// 100. With L(b, p) = b * 100 / p ms a p % gpulet sustains at most 10 p
// req/s (L(b) <= the duty cycle b / rate), so 400 and 200.
Plan TwoGpulets() {
  Plan plan;
  plan.set_policy("tessera");
  DevicePlan* d = plan.add_devices();
  d->set_backend_id("b0");
  d->set_device_id("gpu0");
  for (const auto& [share, rate] : {std::pair{40.0, 300.0}, {20.0, 100.0}}) {
    GpuletPlan* g = d->add_gpulets();
    g->set_share_percent(share);
    ModelAssignment* a = g->add_models();
    a->set_model("y");
    a->set_rate_rps(rate);
    a->set_batch_size(1);
  }
  return plan;
}

// Whether `plan` holds y at `rate` (the layouts point into the inputs,
// which die here: only the status comes back).
absl::Status CheckAt(double rate, const Plan& plan) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("y", 0, 1), rate, 100);
  auto inputs = PolicyInputs::FromSnapshot(s, Paper());
  if (!inputs.ok()) return inputs.status();
  return PlanCheck(inputs->get(), nullptr, false).Check(plan).status();
}

// Today's rate splits 3:1 as planned: 520 gives 390 + 130 (both hold),
// 560 gives 420 on the 40 % gpulet, past its 400.
TEST(PlanCheckTest, SplitsTodaysRateAsPlannedAndChecksEachGpulet) {
  EXPECT_TRUE(CheckAt(400, TwoGpulets()).ok());
  EXPECT_TRUE(CheckAt(520, TwoGpulets()).ok());
  const absl::Status broken = CheckAt(560, TwoGpulets());
  EXPECT_EQ(broken.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(broken.message().find("b0/gpu0 misses an SLO"), std::string::npos)
      << broken;
}

TEST(PlanCheckTest, ReturnsTheGpuletsResolvedForTodaysRates) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("y", 0, 1), 520, 100);
  auto inputs = PolicyInputs::FromSnapshot(s, Paper());
  ASSERT_TRUE(inputs.ok());
  auto layouts = PlanCheck(inputs->get(), nullptr, false).Check(TwoGpulets());
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  ASSERT_EQ(layouts->size(), 1u);
  const auto& slots = (*layouts)[0].slots();
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_NEAR(slots[0].slices[0].rate_rps, 390, 1e-9);
  EXPECT_NEAR(slots[1].slices[0].rate_rps, 130, 1e-9);
  // Re-solved: a round that fits the 100 ms SLO at 390 req/s.
  EXPECT_GT(slots[0].schedule.duty_cycle_ms, 0);
  EXPECT_LE(slots[0].schedule.duty_cycle_ms, 100);
  const Plan rebuilt = BuildPlan(*layouts, "tessera", "");
  EXPECT_NEAR(rebuilt.devices(0).gpulets(0).models(0).rate_rps(), 390, 1e-9);
}

TEST(PlanCheckTest, AModelOrDeviceThePlanDoesNotMatchFailsTheCheck) {
  ClusterSnapshot s = Snapshot(1);
  AddModel(&s, LinearProfile("y", 0, 1), 100, 100);
  AddModel(&s, LinearProfile("z", 0, 1), 10, 100);
  auto inputs = PolicyInputs::FromSnapshot(s, Paper());
  ASSERT_TRUE(inputs.ok());
  const PlanCheck check(inputs->get(), nullptr, false);
  auto unplanned = check.Check(TwoGpulets());
  EXPECT_EQ(unplanned.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(unplanned.status().message().find("'z' has no planned rate"),
            std::string::npos)
      << unplanned.status();
  Plan elsewhere = TwoGpulets();
  elsewhere.mutable_devices(0)->set_device_id("gpu7");
  ClusterSnapshot only_y = Snapshot(1);
  AddModel(&only_y, LinearProfile("y", 0, 1), 100, 100);
  auto y_inputs = PolicyInputs::FromSnapshot(only_y, Paper());
  ASSERT_TRUE(y_inputs.ok());
  auto missing = PlanCheck(y_inputs->get(), nullptr, false).Check(elsewhere);
  EXPECT_NE(missing.status().message().find("b0/gpu7 is not in the cluster"),
            std::string::npos)
      << missing.status();
  Plan abacus = TwoGpulets();
  abacus.mutable_devices(0)->mutable_gpulets(0)->set_scheduler(
      GPULET_SCHEDULER_ABACUS);
  EXPECT_FALSE(PlanCheck(y_inputs->get(), nullptr, false).Check(abacus).ok());
}

// The interference of the neighbour counts: a 1.2x slowdown leaves the
// 40 % gpulet 400 / 1.2 = 333 req/s, so 3/4 of 440 = 330 holds and 3/4 of
// 460 = 345 does not.
TEST(PlanCheckTest, NeighboursSlowEachOtherDown) {
  const ConstantInterference slower(1.2);
  for (const auto& [rate, holds] : {std::pair{440.0, true}, {460.0, false}}) {
    ClusterSnapshot s = Snapshot(1);
    AddModel(&s, LinearProfile("y", 0, 1), rate, 100);
    auto inputs = PolicyInputs::FromSnapshot(s, Paper());
    ASSERT_TRUE(inputs.ok());
    EXPECT_EQ(PlanCheck(inputs->get(), &slower, false).Check(TwoGpulets()).ok(),
              holds)
        << rate;
  }
}

}  // namespace
}  // namespace tessera
