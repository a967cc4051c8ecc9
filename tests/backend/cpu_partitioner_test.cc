#include "backend/cpu_partitioner.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(CpuPartitionerTest, SplitsCoresByShare) {
  auto a = CpuPartitioner::Assign({0, 1, 2, 3}, {25, 75});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)[0], (std::vector<int>{0}));
  EXPECT_EQ((*a)[1], (std::vector<int>{1, 2, 3}));
}

TEST(CpuPartitionerTest, SmallShareStillGetsACore) {
  auto a = CpuPartitioner::Assign({4, 5}, {10, 50});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ((*a)[0], (std::vector<int>{4}));
  EXPECT_EQ((*a)[1], (std::vector<int>{5}));
}

TEST(CpuPartitionerTest, RefusesToOversubscribe) {
  auto a = CpuPartitioner::Assign({0, 1}, {50, 50, 50});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tessera
