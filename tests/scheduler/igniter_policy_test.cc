// The "igniter" policy on hand-built snapshots: coefficients fitted from
// profiles, alpha_cache from the interference model, plans checked by hand.
#include "scheduler/igniter_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "perfmodel/interference_model.h"
#include "scheduler/policy_registry.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using ::testing::HasSubstr;
using testing::LinearProfile;
using testing::Snapshot;

absl::StatusOr<Plan> RunIgniter(
    const ClusterSnapshot& snapshot,
    std::shared_ptr<const InterferenceModel> intf = nullptr,
    bool standby = false) {
  // No headroom, the paper's rule alone: the arithmetic below is exact.
  PolicyOptions options = testing::PaperRules(std::move(intf));
  options.standby_shadows = standby;
  return testing::RunPolicyWith("igniter", snapshot, options);
}

TEST(IgniterPolicyTest, FitsEquationElevenExactlyOnALinearProfile) {
  // L(b, p) = (3 + b) 100 / p is Eq. 11 with k = {0, 100, 300, 0, 0}.
  auto lm = LatencyModel::FromProfile(LinearProfile("a", 3, 1));
  ASSERT_TRUE(lm.ok());
  double err = 1;
  auto w = IgniterPolicy::FitWorkload(*lm, 1.0, 32, &err);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_LT(err, 1e-6);
  EXPECT_NEAR(IgniterModel::ActiveMs(*w, 7, 30), 1000.0 / 30, 1e-4);
  // The profile's L2 is a constant 20 %.
  EXPECT_NEAR(IgniterModel::L2Percent(*w, 5, 50), 20, 1e-6);
  EXPECT_EQ(w->min_share_percent, 20);
}

TEST(IgniterPolicyTest, HalfTheSloForExecutionAndLowerBoundShares) {
  ClusterSnapshot s = Snapshot(2);
  // 100 req/s, SLO 50 ms: b = ceil(50 * 0.1 / 2) = 3;
  // (3 + 3) 100 / r <= 25 -> r >= 24 -> 25 % (r_unit 2.5).
  AddModel(&s, LinearProfile("a", 3, 1), 100, 50);
  AddModel(&s, LinearProfile("b", 3, 1), 100, 50);
  auto plan = RunIgniter(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->policy(), "igniter");
  ASSERT_EQ(plan->devices_size(), 1);
  ASSERT_EQ(plan->devices(0).gpulets_size(), 2);
  for (const auto& g : plan->devices(0).gpulets()) {
    EXPECT_DOUBLE_EQ(g.share_percent(), 25);
    ASSERT_EQ(g.models_size(), 1);
    EXPECT_EQ(g.models(0).batch_size(), 3);
    EXPECT_EQ(g.models(0).duty_cycle_ms(), 0);
    EXPECT_DOUBLE_EQ(g.models(0).rate_rps(), 100);
  }
}

TEST(IgniterPolicyTest, StandbyShadowsGetTenPercentMore) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("a", 3, 1), 100, 50);
  auto without = RunIgniter(s);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(without->devices(0).gpulets(0).standby_share_percent(), 0);
  // The authors' rule: min(r + 10, 100) = 35 % for the 25 % partition.
  auto with = RunIgniter(s, nullptr, /*standby=*/true);
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_DOUBLE_EQ(with->devices(0).gpulets(0).share_percent(), 25);
  EXPECT_DOUBLE_EQ(with->devices(0).gpulets(0).standby_share_percent(), 35);
}

TEST(IgniterPolicyTest, InterferenceModelRaisesBothShares) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("a", 3, 1), 100, 50);
  AddModel(&s, LinearProfile("b", 3, 1), 100, 50);
  // A constant factor 1.2 beside anything: alpha_cache = 0.2 / 20 % L2.
  // Co-located, 720 / r <= 25 -> r >= 28.8 -> 30 % each.
  auto plan = RunIgniter(s, std::make_shared<ConstantInterference>(1.2));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->devices_size(), 1);
  for (const auto& g : plan->devices(0).gpulets()) {
    EXPECT_DOUBLE_EQ(g.share_percent(), 30);
  }
}

TEST(IgniterPolicyTest, DeviceGridSetsTheShareUnit) {
  ClusterSnapshot s = Snapshot(1);
  s.devices[0].allowed_shares = {25, 50, 75, 100};
  AddModel(&s, LinearProfile("a", 3, 1), 100, 50);
  auto plan = RunIgniter(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_DOUBLE_EQ(plan->devices(0).gpulets(0).share_percent(), 25);
  EXPECT_THAT(plan->reason(), HasSubstr("r_unit 25.0%"));
}

TEST(IgniterPolicyTest, PlansItsQueueingCheckAtItsOwnTail) {
  // ALLOC's queueing check (t_inf + W <= SLO, W the tail wait of its
  // batches) at igniter.queueing_tail, not shared.queueing_tail: a looser
  // tail means a shorter W and a smaller share.
  ClusterSnapshot s = Snapshot(1);
  AddModel(&s, LinearProfile("a", 3, 1), 100, 50);
  auto share = [&](double igniter_tail, double shared_tail) {
    PolicyOptions options = testing::PaperRules();
    options.rules.mutable_igniter()->set_queueing_check(true);
    options.rules.mutable_igniter()->set_queueing_tail(igniter_tail);
    options.rules.mutable_shared()->set_queueing_tail(shared_tail);
    auto plan = testing::RunPolicyWith("igniter", s, options);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return plan.ok() ? plan->devices(0).gpulets(0).share_percent() : 0.0;
  };
  const double strict = share(0.001, 0.05);
  const double loose = share(0.05, 0.001);
  EXPECT_LT(loose, strict);
  EXPECT_EQ(share(0.001, 0.001), strict);
  EXPECT_EQ(share(0.05, 0.05), loose);
}

TEST(IgniterPolicyTest, UnschedulableNamesTheModel) {
  ClusterSnapshot s = Snapshot(1);
  // 5 ms at batch 1 on a whole GPU > 8 / 2.
  AddModel(&s, LinearProfile("slow", 4, 1), 10, 8);
  auto plan = RunIgniter(s);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("'slow'"));
}

}  // namespace
}  // namespace tessera
