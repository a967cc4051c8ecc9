#include "common/backlog_bound.h"

#include "common/clock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(BacklogBoundTest, GrowsWithTimeAndRestartsAtEachMark) {
  FakeClock clock;
  BacklogBound backlog(&clock);
  EXPECT_EQ(backlog.Bound(), absl::ZeroDuration());
  clock.Advance(absl::Milliseconds(30));
  EXPECT_EQ(backlog.Bound(), absl::Milliseconds(30));
  backlog.MarkEmpty();
  EXPECT_EQ(backlog.Bound(), absl::ZeroDuration());
  clock.Advance(absl::Milliseconds(7));
  EXPECT_EQ(backlog.Bound(), absl::Milliseconds(7));
}

// Two loops: the later mark counts, and a mark stamped earlier (a loop
// that read the clock before another's mark landed) does not move it back.
TEST(BacklogBoundTest, KeepsTheLatestMark) {
  FakeClock clock;
  BacklogBound backlog(&clock);
  clock.Advance(absl::Milliseconds(10));
  backlog.MarkEmpty();
  clock.Set(clock.Now() - absl::Milliseconds(5));
  backlog.MarkEmpty();
  clock.Advance(absl::Milliseconds(5));
  EXPECT_EQ(backlog.Bound(), absl::ZeroDuration());
}

}  // namespace
}  // namespace tessera
