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

TEST(WeightedRoundRobinTest, EqualWeightsWithExactSumsRotate) {
  // Equal credits tie, and the first of them wins: 0, 1, 2, 0, 1, 2, ...
  for (int n : {2, 3, 5}) {
    EXPECT_EQ(MinRoundRobinSpacings(std::vector<double>(n, 7.5)),
              std::vector<int>(n, n))
        << n;
  }
}

TEST(WeightedRoundRobinTest, RoundingCanBreakTheRotationOfEqualWeights) {
  // 800 / 3 is not exact in binary: after a few rounds the credits that
  // should tie differ in their last bit, and the sequence goes 0, 1, 2,
  // 0, 1, 2, 1, 0, 2, ... so a choice can come back after 2 picks. The
  // spacings say what the router does, not what exact arithmetic would.
  const std::vector<int> s =
      MinRoundRobinSpacings(std::vector<double>(3, 800.0 / 3));
  EXPECT_LT(*std::min_element(s.begin(), s.end()), 3);
  EXPECT_EQ(MinRoundRobinSpacings({200, 200, 200, 200}),
            std::vector<int>(4, 4));
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
