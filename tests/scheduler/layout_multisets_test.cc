#include "scheduler/layout_multisets.h"

#include <set>

#include "gtest/gtest.h"

namespace tessera {
namespace {

bool NonDecreasing(const std::vector<int>& v) {
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] < v[i - 1]) return false;
  }
  return true;
}

TEST(LayoutMultisetsTest, AllIsEveryMultisetOnce) {
  EXPECT_EQ(LayoutMultisets::Count(1), 4);
  EXPECT_EQ(LayoutMultisets::Count(2), 10);
  EXPECT_EQ(LayoutMultisets::Count(4), 35);
  EXPECT_EQ(LayoutMultisets::Count(8), 165);
  for (int n : {1, 2, 4, 8}) {
    const auto all = LayoutMultisets::All(n);
    EXPECT_EQ(all.size(), LayoutMultisets::Count(n)) << n;
    std::set<std::vector<int>> distinct(all.begin(), all.end());
    EXPECT_EQ(distinct.size(), all.size()) << n;
    for (const auto& layout : all) {
      ASSERT_EQ(layout.size(), static_cast<size_t>(n));
      EXPECT_TRUE(NonDecreasing(layout));
      for (int k : layout) EXPECT_TRUE(k >= 0 && k < 4);
    }
  }
  EXPECT_TRUE(LayoutMultisets::All(0).empty());
}

TEST(LayoutMultisetsTest, SimplestIsEverythingWhenTheBudgetCoversIt) {
  EXPECT_EQ(LayoutMultisets::Simplest(4, 35), LayoutMultisets::All(4));
  EXPECT_EQ(LayoutMultisets::Simplest(4, 64), LayoutMultisets::All(4));
  EXPECT_TRUE(LayoutMultisets::Simplest(4, 0).empty());
}

// 8 GPUs (165 multisets) with a budget of 10: the 4 homogeneous layouts,
// then half of the GPUs of one kind and half of another, for the 6 pairs
// of kinds in order.
TEST(LayoutMultisetsTest, SimplestGoesFromHomogeneousToHalvesToQuarters) {
  const auto some = LayoutMultisets::Simplest(8, 10);
  ASSERT_EQ(some.size(), 10u);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(some[k], std::vector<int>(8, k)) << k;
  }
  EXPECT_EQ(some[4], (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(some[9], (std::vector<int>{2, 2, 2, 2, 3, 3, 3, 3}));
  // Next level: a quarter of kind 0 (2 GPUs) with kind 1, then 3/4.
  const auto more = LayoutMultisets::Simplest(8, 12);
  EXPECT_EQ(more[10], (std::vector<int>{0, 0, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(more[11], (std::vector<int>{0, 0, 0, 0, 0, 0, 1, 1}));
  // With a budget of all two-kind mixes, each count 1..7 of each pair
  // appears once: 4 + 6 * 7.
  const auto two = LayoutMultisets::Simplest(8, 100);
  EXPECT_EQ(two.size(), 46u);
  std::set<std::vector<int>> distinct(two.begin(), two.end());
  EXPECT_EQ(distinct.size(), two.size());
  // A thousand GPUs: the budget bounds the work, not C(1003, 3).
  EXPECT_EQ(LayoutMultisets::Simplest(1000, 64).size(), 64u);
}

}  // namespace
}  // namespace tessera
