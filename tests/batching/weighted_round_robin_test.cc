#include "batching/weighted_round_robin.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(WeightedRoundRobinTest, SplitsInProportionAndInterleaves) {
  WeightedRoundRobin w;
  w.Add(30);
  w.Add(10);
  std::vector<int> counts(2, 0);
  std::vector<int> first_eight;
  for (int i = 0; i < 400; ++i) {
    const int c = w.Next();
    ++counts[c];
    if (i < 8) first_eight.push_back(c);
  }
  EXPECT_EQ(counts[0], 300);
  EXPECT_EQ(counts[1], 100);
  // Smooth: the light choice comes once in every four, not in a run.
  EXPECT_EQ(first_eight, (std::vector<int>{0, 0, 1, 0, 0, 0, 1, 0}));
}

TEST(WeightedRoundRobinTest, NonPositiveWeightsCountAsOne) {
  WeightedRoundRobin w;
  w.Add(0);
  w.Add(-5);
  std::vector<int> counts(2, 0);
  for (int i = 0; i < 10; ++i) ++counts[w.Next()];
  EXPECT_EQ(counts[0], 5);
  EXPECT_EQ(counts[1], 5);
}

TEST(WeightedRoundRobinTest, EqualWeightsRotateWhateverTheirRounding) {
  // Equal weights tie exactly, and the first of them wins: 0, 1, 2, 0, 1,
  // 2, ... also where the weights are not exact in binary (800 / 3 broke
  // the smooth round robin's rotation).
  for (int n : {2, 3, 5}) {
    for (double w : {7.5, 800.0 / 3, 0.1}) {
      EXPECT_EQ(MinRoundRobinSpacings(std::vector<double>(n, w)),
                std::vector<int>(n, n))
          << n << " x " << w;
    }
  }
}

TEST(WeightedRoundRobinTest, EqualWeightsStayApartBesideOthers) {
  // n equal weights beside unequal ones: each of the n at least n picks
  // after its last (the header's argument). The smooth round robin picked
  // one of two 452s twice running beside a 275.
  EXPECT_EQ(MinRoundRobinSpacings({452, 452, 275}),
            (std::vector<int>{2, 2, 3}));
  const std::vector<std::vector<double>> cases = {
      {150, 150, 150, 3},
      {337.3, 304.1, 337.3, 293.9, 169.9, 337.3},
      {480.8, 150.6, 480.8, 480.8, 100.7, 246.6},
      {0.7, 0.7, 0.7, 0.7, 0.7, 2.9}};
  for (const auto& weights : cases) {
    const std::vector<int> s = MinRoundRobinSpacings(weights);
    for (size_t i = 0; i < weights.size(); ++i) {
      const int n = static_cast<int>(
          std::count(weights.begin(), weights.end(), weights[i]));
      EXPECT_GE(s[i], n) << i;
    }
  }
}

TEST(WeightedRoundRobinTest, SpacingOfUnequalWeightsByHand) {
  // Weights 2 and 1 (total 3), credits after each pick:
  //   +[2, 1] -> 0, [-1, 1]; +[1, 2] -> 1, [1, -1]; +[3, 0] -> 0, [0, 0];
  //   +[2, 1] -> 0, [-1, 1]; ... so 0, 1, 0, 0, 1, 0, 0, 1, ...
  // The heavy choice is picked twice running; the light one every third.
  EXPECT_EQ(MinRoundRobinSpacings({2, 1}), (std::vector<int>{1, 3}));
  // A choice picked once in the window: the window.
  EXPECT_EQ(MinRoundRobinSpacings({1000, 1}, 100), (std::vector<int>{1, 100}));
}

}  // namespace
}  // namespace tessera
