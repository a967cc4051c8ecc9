#include "scheduler/ideal_layout_policy.h"

#include "gtest/gtest.h"
#include "perfmodel/interference_model.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using testing::LinearProfile;
using testing::Snapshot;

PolicyOptions Options() {
  PolicyOptions o;
  o.rules = PresetRules(RULES_PRESET_PAPER);
  return o;
}

// Both models: L(b, p) = b * 100 / p ms, so a gpulet of p % serves at most
// 10 p req/s and throughput is linear in share: p_eff is 40 (the first
// pair wins a tie). X (300 req/s, first: the smaller rate x SLO) is a
// residue needing 40 %. Y (550 req/s) exceeds a saturated 40 % gpulet
// (400): its saturated gpulet takes the best-fitting free slot >= 40 %
// and serves what that slot sustains, and its residue time-shares X's
// gpulet if it fits there (X's 40 % carries 400 req/s).
// Share in use per layout: with a 50 % slot free, Y serves 500 there and
// its 50 left join X (300 + 50 <= 400): 40 + 50 = 90 %, the least of all
// 10 multisets of two GPUs (a 40 and a 50 never share a GPU). The first
// multiset that has both is {40/60, 50/50}.
TEST(IdealLayoutPolicyTest, PicksTheLayoutWithTheLeastShareOnTwoGpus) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("x", 0, 1), 300, 100);
  AddModel(&s, LinearProfile("y", 0, 1), 550, 100);
  auto policy = IdealLayoutPolicy::Create(Options());
  ASSERT_TRUE(policy.ok());
  auto plan = (*policy)->Schedule(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_NE(plan->reason().find("best of 10 fixed layouts (10 fit): 90% on 2"),
            std::string::npos)
      << plan->reason();
  ASSERT_EQ(plan->devices_size(), 2) << plan->DebugString();
  // gpu0 (40/60): X and Y's residue time-share the 40 %.
  const GpuletPlan& shared = plan->devices(0).gpulets(0);
  EXPECT_EQ(plan->devices(0).gpulets_size(), 1);
  EXPECT_EQ(shared.share_percent(), 40);
  ASSERT_EQ(shared.models_size(), 2);
  EXPECT_EQ(shared.models(0).model(), "x");
  EXPECT_NEAR(shared.models(0).rate_rps(), 300, 1e-9);
  EXPECT_EQ(shared.models(1).model(), "y");
  EXPECT_NEAR(shared.models(1).rate_rps(), 50, 1e-6);
  // gpu1 (50/50): Y saturated on one half.
  ASSERT_EQ(plan->devices(1).gpulets_size(), 1);
  EXPECT_EQ(plan->devices(1).gpulets(0).share_percent(), 50);
  EXPECT_NEAR(plan->devices(1).gpulets(0).models(0).rate_rps(), 500, 1e-6);
}

// On one GPU, Y at 950 req/s needs 100 % (a saturated 40 % gpulet and a
// 60 % one serve 400 + 550) and X 300 req/s more: no layout of a single
// GPU carries 1250 req/s (at most 1000), so the search refuses.
TEST(IdealLayoutPolicyTest, RefusesWhenNoLayoutFits) {
  ClusterSnapshot s = Snapshot(1);
  AddModel(&s, LinearProfile("x", 0, 1), 300, 100);
  AddModel(&s, LinearProfile("y", 0, 1), 950, 100);
  auto plan = (*IdealLayoutPolicy::Create(Options()))->Schedule(s);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(plan.status().message().find("none of the 4 partition layouts"),
            std::string::npos)
      << plan.status();
}

TEST(IdealLayoutPolicyTest, AtLeastAsMuchAsGpuletAtTheSameRules) {
  // The dynamic split gpulet makes is one of the fixed layouts searched.
  for (double rate : {100.0, 400.0, 700.0, 900.0}) {
    ClusterSnapshot s = Snapshot(2);
    AddModel(&s, LinearProfile("x", 2, 1), rate, 60);
    AddModel(&s, LinearProfile("y", 5, 2), rate / 2, 80);
    PolicyOptions o = Options();
    o.interference = std::make_shared<ConstantInterference>(1.2);
    auto gpulet = testing::RunPolicyWith("gpulet", s, o);
    auto ideal = testing::RunPolicyWith("ideal-layout", s, o);
    if (gpulet.ok()) EXPECT_TRUE(ideal.ok()) << rate << ": " << ideal.status();
  }
}

}  // namespace
}  // namespace tessera
