#include "scheduler/resolve_memo.h"

#include <memory>

#include "gtest/gtest.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using testing::LinearProfile;
using testing::PaperRules;
using testing::Snapshot;

class ResolveMemoTest : public ::testing::Test {
 protected:
  ResolveMemoTest() {
    snapshot_ = Snapshot(1);
    AddModel(&snapshot_, LinearProfile("x", 2, 1), 100, 40);
    AddModel(&snapshot_, LinearProfile("y", 4, 2), 50, 60);
    inputs_ = *PolicyInputs::FromSnapshot(snapshot_, PaperRules());
  }

  // x and y on a 50/50 GPU, at these rates.
  GpuLayout Layout(double x_rps, double y_rps, bool within = false) const {
    GpuLayout layout(&snapshot_.devices[0], {50, 50});
    layout.set_interference_within_headroom(within);
    layout.slots()[0].slices = {Slice{&inputs_->demands()[0], x_rps}};
    layout.slots()[1].slices = {Slice{&inputs_->demands()[1], y_rps}};
    return layout;
  }

  ClusterSnapshot snapshot_;
  std::unique_ptr<PolicyInputs> inputs_;
  const ConstantInterference slow_{1.3};
};

TEST_F(ResolveMemoTest, AnEqualLayoutGetsTheSameSchedulesOnce) {
  GpuLayout direct = Layout(100, 50);
  ASSERT_TRUE(direct.Resolve(&slow_));
  ResolveMemo memo;
  for (int i = 0; i < 3; ++i) {
    GpuLayout layout = Layout(100, 50);
    ASSERT_TRUE(memo.Resolve(&slow_, &layout));
    for (size_t k = 0; k < 2; ++k) {
      const GpuletSchedule& got = layout.slots()[k].schedule;
      const GpuletSchedule& want = direct.slots()[k].schedule;
      EXPECT_EQ(got.batches, want.batches);
      EXPECT_EQ(got.caps, want.caps);
      EXPECT_DOUBLE_EQ(got.duty_cycle_ms, want.duty_cycle_ms);
      EXPECT_DOUBLE_EQ(got.occupancy, want.occupancy);
    }
  }
  EXPECT_EQ(memo.misses(), 1);
  EXPECT_EQ(memo.hits(), 2);
}

TEST_F(ResolveMemoTest, ARateAModelOrASettingApartIsAnotherLayout) {
  ResolveMemo memo;
  const NoInterference none;
  GpuLayout a = Layout(100, 50), b = Layout(100, 51), c = Layout(100, 50),
            d = Layout(100, 50, /*within=*/true), e = Layout(50, 100);
  ASSERT_TRUE(memo.Resolve(&slow_, &a));
  ASSERT_TRUE(memo.Resolve(&slow_, &b));
  ASSERT_TRUE(memo.Resolve(&none, &c));
  ASSERT_TRUE(memo.Resolve(&slow_, &d));
  // The same rates, on the other model's gpulet: x's gpulet now carries
  // y's rate and the other way round.
  std::swap(e.slots()[0].slices[0].demand, e.slots()[1].slices[0].demand);
  ASSERT_TRUE(memo.Resolve(&slow_, &e));
  EXPECT_EQ(memo.misses(), 5);
  EXPECT_EQ(memo.hits(), 0);
  // Not another layout's answer: 1.3x latencies leave less of the gpulet
  // free than none.
  EXPECT_GT(a.slots()[0].schedule.occupancy, c.slots()[0].schedule.occupancy);
}

TEST_F(ResolveMemoTest, AFailureIsRememberedAndLeavesTheSlotsUnsolved) {
  // x at 50 %: L(b) = 2 (2 + b) ms, SLO 40: 2L <= 40 needs b <= 8, so at
  // most 8 / 20 ms = 400 req/s; 5,000 cannot hold.
  ResolveMemo memo;
  GpuLayout first = Layout(5000, 50);
  EXPECT_FALSE(memo.Resolve(&slow_, &first));
  GpuLayout second = Layout(5000, 50);
  EXPECT_FALSE(memo.Resolve(&slow_, &second));
  EXPECT_EQ(memo.misses(), 1);
  EXPECT_EQ(memo.hits(), 1);
  for (const GpuLayout::Slot& slot : second.slots()) {
    EXPECT_TRUE(slot.schedule.batches.empty());
  }
}

TEST_F(ResolveMemoTest, ASolvedLayoutIsResolvedDirectly) {
  ResolveMemo memo;
  GpuLayout layout = Layout(100, 50);
  ASSERT_TRUE(memo.Resolve(&slow_, &layout));
  // Resolve starts from the slots' batches: a solved layout is not keyed
  // by its slots alone.
  ASSERT_TRUE(memo.Resolve(&slow_, &layout));
  EXPECT_EQ(memo.misses(), 1);
  EXPECT_EQ(memo.hits(), 0);
}

}  // namespace
}  // namespace tessera
