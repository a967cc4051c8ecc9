#include "frontend/transport_wait.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

absl::Duration Ms(int64_t ms) { return absl::Milliseconds(ms); }

// A client with a 5 s timeout: the call with the most time left stands for
// a call that did not wait; later calls with less left waited the
// difference. Each pair has its own.
TEST(TransportWaitTest, WaitIsTheLongestTimeLeftMinusTheCallsOwn) {
  TransportWait waits;
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  EXPECT_EQ(waits.Observe("a/lenet", t0 + absl::Seconds(5), t0),
            absl::ZeroDuration());
  const absl::Time t1 = t0 + Ms(100);
  // Arrived at t0 + 60 ms, handled at t0 + 100 ms: waited 40 ms.
  EXPECT_EQ(waits.Observe("a/lenet", t0 + Ms(60) + absl::Seconds(5), t1),
            Ms(40));
  // Another pair knows nothing yet.
  EXPECT_EQ(waits.Observe("b/lenet", t0 + Ms(60) + absl::Seconds(1), t1),
            absl::ZeroDuration());
  // No deadline: nothing to say.
  EXPECT_EQ(waits.Observe("a/lenet", absl::InfiniteFuture(), t1),
            absl::ZeroDuration());
}

// Windows of 1 s: a client that shortens its timeout from 5 s to 1 s is
// believed two windows later; until then its calls look 4 s old.
TEST(TransportWaitTest, ForgetsATimeoutAfterTwoWindows) {
  TransportWait waits(absl::Seconds(1));
  absl::Time now = absl::UnixEpoch() + absl::Hours(1);
  waits.Observe("a/m", now + absl::Seconds(5), now);
  now += Ms(500);
  EXPECT_EQ(waits.Observe("a/m", now + absl::Seconds(1), now),
            absl::Seconds(4));
  now += Ms(700);  // second window: the 5 s is the previous window's
  EXPECT_EQ(waits.Observe("a/m", now + absl::Seconds(1), now),
            absl::Seconds(4));
  now += absl::Seconds(1);  // third window
  EXPECT_EQ(waits.Observe("a/m", now + absl::Seconds(1), now),
            absl::ZeroDuration());
}

TEST(TransportWaitTest, TracksAtMostMaxKeysPairs) {
  TransportWait waits(absl::Seconds(30), /*max_keys=*/1);
  const absl::Time now = absl::UnixEpoch() + absl::Hours(1);
  waits.Observe("a/m", now + absl::Seconds(5), now);
  waits.Observe("b/m", now + absl::Seconds(5), now);
  // "b/m" was not recorded: its shorter deadline is no wait.
  EXPECT_EQ(waits.Observe("b/m", now + absl::Seconds(1), now),
            absl::ZeroDuration());
  EXPECT_EQ(waits.Observe("a/m", now + absl::Seconds(1), now),
            absl::Seconds(4));
}

}  // namespace
}  // namespace tessera
