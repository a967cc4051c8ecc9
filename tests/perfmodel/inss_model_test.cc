#include "perfmodel/inss_model.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(InssModelTest, ExecAddsTheCoRunnersExcess) {
  EXPECT_DOUBLE_EQ(InssModel::ExecMs(10, 0), 10);
  EXPECT_DOUBLE_EQ(InssModel::ExecMs(10, 0.25), 12.5);
}

TEST(InssModelTest, WorstTaskWaitsForItsBatchToFill) {
  // b = 4 at 100 req/s: the first task waits (4 - 1) / 100 s = 30 ms for
  // the batch, then 20 ms of execution; the previous batch finished long
  // ago (it filled 40 ms earlier and ran 20 ms).
  EXPECT_DOUBLE_EQ(InssModel::WorstTaskMs(4, 100, 20, 0), 50);
  // A batch that runs 50 ms: 10 ms of it are left when the next fills
  // (40 ms), less than the 30 ms fill wait: max(10, 30) + 50.
  EXPECT_DOUBLE_EQ(InssModel::WorstTaskMs(4, 100, 50, 0), 80);
  // Slow enough that the GPU is the bottleneck: 100 - 10 = 90 ms left of
  // the batch in flight, more than the fill wait.
  EXPECT_DOUBLE_EQ(InssModel::WorstTaskMs(4, 400, 100, 0), 90 + 100);
}

TEST(InssModelTest, WorstTaskBehindABacklogWaitsForWholeBatches) {
  // 5 queued + itself = 6 >= 4: ceil(6 / 4) = 2 executions of 20 ms.
  EXPECT_DOUBLE_EQ(InssModel::WorstTaskMs(4, 100, 20, 5), 40);
  // Exactly one batch's worth (3 queued + itself): one execution.
  EXPECT_DOUBLE_EQ(InssModel::WorstTaskMs(4, 100, 20, 3), 20);
  // Partially filled: 2 queued + itself, one more arrival (10 ms) needed.
  EXPECT_DOUBLE_EQ(InssModel::WorstTaskMs(4, 100, 20, 2), 10 + 20);
}

TEST(InssModelTest, CapacityIsBatchOverExecution) {
  EXPECT_DOUBLE_EQ(InssModel::CapacityRps(8, 40), 200);
  EXPECT_DOUBLE_EQ(InssModel::CapacityRps(8, 0), 0);
}

}  // namespace
}  // namespace tessera
