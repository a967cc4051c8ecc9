#include "batching/weighted_round_robin.h"

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

}  // namespace
}  // namespace tessera
