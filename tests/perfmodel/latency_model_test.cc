#include "perfmodel/latency_model.h"

#include <limits>

#include "gtest/gtest.h"

namespace tessera {
namespace {

ModelProfile Profile(
    std::initializer_list<std::tuple<int, double, double>> pts) {
  ModelProfile p;
  p.set_model("m");
  for (auto [b, share, ms] : pts) {
    LatencyPoint* pt = p.add_latency();
    pt->set_batch_size(b);
    pt->set_share_percent(share);
    pt->set_latency_ms(ms);
    pt->set_l2_util_percent(10.0 * b);
  }
  return p;
}

TEST(LatencyModelTest, InterpolatesBatchLinearlyAndShareInInverse) {
  auto m = LatencyModel::FromProfile(
      Profile({{1, 50, 10}, {4, 50, 16}, {1, 100, 5}, {4, 100, 8}}));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->LatencyMs(2, 50), 12);
  EXPECT_DOUBLE_EQ(m->LatencyMs(4, 100), 8);
  // p = 2/3 of the way from 1/50 to 1/100 in 1/p: p = 75 -> 1/75.
  // t = (1/75 - 1/50) / (1/100 - 1/50) = 2/3 -> 10 + 2/3 * (5 - 10).
  EXPECT_NEAR(m->LatencyMs(1, 75), 10 - 10.0 / 3, 1e-9);
  // Above the largest batch: slope of the last two points (2 ms/item).
  EXPECT_DOUBLE_EQ(m->LatencyMs(6, 50), 20);
  EXPECT_DOUBLE_EQ(m->L2Util(2, 50), 20);
}

TEST(LatencyModelTest, MakesNoisyPointsMonotone) {
  // L(2,100) measured below L(1,100), and L(1,100) above L(1,50).
  auto m = LatencyModel::FromProfile(
      Profile({{1, 50, 10}, {2, 50, 12}, {1, 100, 11}, {2, 100, 6}}));
  ASSERT_TRUE(m.ok());
  EXPECT_GE(m->LatencyMs(2, 100), m->LatencyMs(1, 100));
  EXPECT_GE(m->LatencyMs(1, 50), m->LatencyMs(1, 100));
  EXPECT_GE(m->LatencyMs(2, 50), m->LatencyMs(2, 100));
}

TEST(LatencyModelTest, BatchOneOnlySharesDoNotExtrapolateLargeBatches) {
  // 100 % profiled at batch 1 only (as in the V100 data): batch 8 at 90 %
  // must come from the 80 % curve, not from extrapolating 100 %'s point.
  auto m = LatencyModel::FromProfile(
      Profile({{1, 80, 4}, {8, 80, 20}, {1, 100, 3}}));
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m->LatencyMs(8, 90), 20);
  EXPECT_LT(m->LatencyMs(1, 100), m->LatencyMs(1, 80));
}

TEST(LatencyModelTest, RejectsBadPoints) {
  EXPECT_FALSE(LatencyModel::FromProfile(Profile({{0, 50, 1}})).ok());
  EXPECT_FALSE(LatencyModel::FromProfile(Profile({{1, 150, 1}})).ok());
  EXPECT_FALSE(LatencyModel::FromProfile(Profile({{1, 50, 0}})).ok());
  EXPECT_FALSE(LatencyModel::FromProfile(ModelProfile()).ok());
  // Found by the config-loader fuzzer: a batch of 888,888,881 made the
  // dense tables ask for 7 GB.
  EXPECT_FALSE(
      LatencyModel::FromProfile(Profile({{1, 50, 1}, {888888881, 50, 2}}))
          .ok());
  EXPECT_TRUE(
      LatencyModel::FromProfile(
          Profile({{1, 50, 1}, {LatencyModel::kMaxProfiledBatch, 50, 2}}))
          .ok());
  EXPECT_FALSE(LatencyModel::FromProfile(
                   Profile({{1, 50, std::numeric_limits<double>::infinity()}}))
                   .ok());
}

}  // namespace
}  // namespace tessera
