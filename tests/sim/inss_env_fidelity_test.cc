// InssEnvFidelity: the ranking check's statistic on hand-computed states,
// and a small run on iGniter's V100 measurements (../shared/data, read at
// run time).
#include "sim/inss_env_fidelity.h"

#include <cmath>
#include <filesystem>

#include "gtest/gtest.h"
#include "sim/inss_v100_setup.h"

namespace tessera {
namespace {

const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";

TEST(InssEnvFidelityTest, RankStateAgreesWhenRewardOrdersAsHeadroom) {
  const InssEnvFidelity::StateRank rank =
      InssEnvFidelity::RankState({1, 2, 3}, {0, 1, 2});
  EXPECT_TRUE(rank.counted);
  EXPECT_DOUBLE_EQ(rank.spearman, 1);
  EXPECT_DOUBLE_EQ(rank.argmax_ratio, 1);
}

// The reward's best placement has no room while another has 4x: ratio 0,
// and the orders are reversed.
TEST(InssEnvFidelityTest, RankStateScoresAReversedOrder) {
  const InssEnvFidelity::StateRank rank =
      InssEnvFidelity::RankState({3, 2, 1}, {0, 1, 4});
  EXPECT_TRUE(rank.counted);
  EXPECT_DOUBLE_EQ(rank.spearman, -1);
  EXPECT_DOUBLE_EQ(rank.argmax_ratio, 0);
}

// Tied rewards share their mean rank: ranks (1.5, 1.5, 0) against
// (2, 1, 0) give 1.5 / sqrt(1.5 * 2); the first best reward (headroom 2
// of 2) is the argmax. A middle placement as argmax gives 1 / 2.
TEST(InssEnvFidelityTest, RankStateSharesTiedRanksAndTakesTheFirstBest) {
  InssEnvFidelity::StateRank rank =
      InssEnvFidelity::RankState({5, 5, 1}, {2, 1, 0});
  EXPECT_TRUE(rank.counted);
  EXPECT_NEAR(rank.spearman, 1.5 / std::sqrt(3.0), 1e-12);
  EXPECT_DOUBLE_EQ(rank.argmax_ratio, 1);
  rank = InssEnvFidelity::RankState({1, 9, 2}, {2, 1, 0});
  EXPECT_DOUBLE_EQ(rank.argmax_ratio, 0.5);
}

// A state where no placement leaves room is left out of the means.
TEST(InssEnvFidelityTest, RankStateSkipsAStateWithoutHeadroom) {
  EXPECT_FALSE(InssEnvFidelity::RankState({1, 2, 3}, {0, 0, 0}).counted);
  EXPECT_FALSE(InssEnvFidelity::RankState({}, {}).counted);
  EXPECT_FALSE(InssEnvFidelity::RankState({1, 2}, {1}).counted);
}

// A small run on the V100 data: every sample and state is scored, the
// statistics are in their ranges, and the same seed gives the same numbers.
TEST(InssEnvFidelityTest, ASmallRunIsReproducibleAndInRange) {
  if (!std::filesystem::exists(kProfile)) {
    GTEST_SKIP() << "no V100 data at " << kProfile;
  }
  auto setup = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const InssCheckpointInfo info =
      V100InssInfo({"alexnet", "resnet50", "vgg19", "ssd"}, 9, 8);
  auto sampler = V100InssSampler(**setup, info, InssWorkloadSamplerOptions());
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  InssEnvFidelity::Options options;
  options.samples = 4;
  options.rank_states = 8;
  options.rank_placements = 12;
  options.min_load = options.max_load = 0.1;  // light: some placements fit
  options.sim.duration = absl::Seconds(1);
  options.sim.min_requests = 0;
  const InssEnvFidelity study(setup->get(), &*sampler, options);
  auto first = study.Run();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->samples.size(), 4u);
  for (const InssEnvFidelity::Sample& s : first->samples) {
    EXPECT_GE(s.env_violation, 0);
    EXPECT_LE(s.env_violation, 1);
    EXPECT_GE(s.sim_violation, 0);
    EXPECT_LE(s.sim_violation, 1);
  }
  EXPECT_GT(first->rank_states, 0);
  EXPECT_LE(first->rank_states, 8);
  EXPECT_GE(first->argmax_headroom_ratio, 0);
  EXPECT_LE(first->argmax_headroom_ratio, 1);
  EXPECT_GE(first->reward_headroom_spearman, -1);
  EXPECT_LE(first->reward_headroom_spearman, 1);
  auto second = study.Run();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->rank_states, first->rank_states);
  EXPECT_DOUBLE_EQ(second->argmax_headroom_ratio, first->argmax_headroom_ratio);
  EXPECT_DOUBLE_EQ(second->reward_headroom_spearman,
                   first->reward_headroom_spearman);
  EXPECT_DOUBLE_EQ(second->reward_pearson, first->reward_pearson);
}

}  // namespace
}  // namespace tessera
