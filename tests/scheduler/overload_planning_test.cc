#include "scheduler/overload_planning.h"

#include "gtest/gtest.h"
#include "scheduler/plan_ids.h"
#include "scheduler/policy_registry.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

std::unique_ptr<SchedulingPolicy> Greedy() {
  return *PolicyRegistry::Create("greedy", testing::PaperRules());
}

TEST(ScheduleWithOverloadTest, FeasibleLoadIsPlannedWhole) {
  ClusterSnapshot s = testing::Snapshot(1);
  testing::AddModel(&s, testing::LinearProfile("m", 2, 1), 100, 40);
  auto out = ScheduleWithOverload(*Greedy(), s, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->scale, 1);
  EXPECT_DOUBLE_EQ(PlannedRateRps(out->plan, "m"), 100);
}

TEST(ScheduleWithOverloadTest, OverloadIsPlannedForAFractionOfTheLoad) {
  // One GPU; the policy refuses the full rate but not 80%^k of it.
  ClusterSnapshot s = testing::Snapshot(1);
  testing::AddModel(&s, testing::LinearProfile("m", 2, 1), 100, 40);
  for (ModelSnapshot& m : s.models) m.rate_rps = 4000;
  ASSERT_TRUE(absl::IsResourceExhausted(Greedy()->Schedule(s).status()));
  auto out = ScheduleWithOverload(*Greedy(), s, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(out->scale, 1);
  EXPECT_GT(out->scale, 0.05);
  // The plan carries exactly the scaled rate, which the policy accepted,
  // and the next larger step (÷0.8) it refused.
  EXPECT_NEAR(PlannedRateRps(out->plan, "m"), 4000 * out->scale, 1e-6);
  ClusterSnapshot larger = s;
  larger.models[0].rate_rps = 4000 * out->scale / 0.8;
  EXPECT_TRUE(absl::IsResourceExhausted(Greedy()->Schedule(larger).status()));
}

TEST(ScheduleWithOverloadTest, UnplaceableEvenAtTheFloorKeepsThePolicysError) {
  ClusterSnapshot s = testing::Snapshot(1);
  // An SLO no partition meets even at the floor rate.
  testing::AddModel(&s, testing::LinearProfile("m", 50, 1), 10, 5);
  auto direct = Greedy()->Schedule(s);
  ASSERT_FALSE(direct.ok());
  auto out = ScheduleWithOverload(*Greedy(), s, 10);
  ASSERT_FALSE(out.ok());
  // At its floor rate it is still refused with the policy's own reason.
  EXPECT_EQ(out.status().code(), direct.status().code());
}

}  // namespace
}  // namespace tessera
