// Client-side adaptive throttling: the refusal probability against its
// formula, the window, and the load a throttled client puts on a server
// that refuses most of it.
#include "tools/adaptive_throttle.h"

#include <random>

#include "gtest/gtest.h"

namespace tessera {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

AdaptiveThrottle::Options WithK(double k) {
  AdaptiveThrottle::Options options;
  options.k = k;
  options.window = absl::Seconds(10);
  options.buckets = 10;
  return options;
}

TEST(AdaptiveThrottleTest, NeverRefusesWhileTheServerAccepts) {
  AdaptiveThrottle throttle(WithK(1));
  for (int i = 0; i < 1000; ++i) {
    const absl::Time t = kStart + absl::Milliseconds(i);
    // A draw of 0 is refused whenever the probability is above 0.
    ASSERT_TRUE(throttle.Admit(t, 0.0)) << "request " << i;
    throttle.Answered(
        t, i % 2 ? absl::StatusCode::kOk : absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(throttle.RefusalProbability(kStart + absl::Seconds(1)), 0);
}

TEST(AdaptiveThrottleTest, RefusesByTheBooksFormula) {
  AdaptiveThrottle throttle(WithK(2));
  // 100 requests, 30 accepted; the rest refused by each refusal code.
  const absl::StatusCode refusals[] = {absl::StatusCode::kResourceExhausted,
                                       absl::StatusCode::kUnavailable,
                                       absl::StatusCode::kDeadlineExceeded};
  for (int i = 0; i < 100; ++i) {
    const absl::Time t = kStart + absl::Milliseconds(10 * i);
    ASSERT_TRUE(throttle.Admit(t, 0.999));
    throttle.Answered(t, i < 30 ? absl::StatusCode::kOk : refusals[i % 3]);
  }
  const absl::Time now = kStart + absl::Seconds(1);
  // (100 - 2 * 30) / (100 + 1)
  EXPECT_DOUBLE_EQ(throttle.RefusalProbability(now), 40.0 / 101);
  EXPECT_FALSE(throttle.Admit(now, 40.0 / 101 - 1e-9));
  // The refused request counts too: (101 - 60) / 102.
  EXPECT_DOUBLE_EQ(throttle.RefusalProbability(now), 41.0 / 102);
  EXPECT_TRUE(throttle.Admit(now, 41.0 / 102 + 1e-9));
}

TEST(AdaptiveThrottleTest, ForgetsWhatLeftTheWindow) {
  AdaptiveThrottle throttle(WithK(2));
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(throttle.Admit(kStart, 0.999));
    throttle.Answered(kStart, absl::StatusCode::kResourceExhausted);
  }
  EXPECT_NEAR(throttle.RefusalProbability(kStart + absl::Seconds(9)), 50.0 / 51,
              1e-12);
  EXPECT_EQ(throttle.RefusalProbability(kStart + absl::Seconds(10)), 0);
  // A request counts once answered; then an answer whose send has left
  // the window is not counted.
  const absl::Time later = kStart + absl::Seconds(20);
  ASSERT_TRUE(throttle.Admit(later, 0.0));
  throttle.Answered(later, absl::StatusCode::kResourceExhausted);
  throttle.Answered(kStart, absl::StatusCode::kOk);
  EXPECT_DOUBLE_EQ(throttle.RefusalProbability(later), 1.0 / 2);
}

// A request awaiting its answer counts neither way while its window slot
// (here 1 s) is open, so a client whose first answers are not back yet
// sends on; once the slot has closed it counts as refused until answered,
// so a server that stalls is shed from.
TEST(AdaptiveThrottleTest, RequestsInFlightCountOnceTheirSlotHasClosed) {
  AdaptiveThrottle throttle(WithK(2));
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(throttle.Admit(kStart + absl::Microseconds(i), 0.0))
        << "request " << i;
  }
  const absl::Time next_slot = kStart + absl::Seconds(1);
  EXPECT_DOUBLE_EQ(throttle.RefusalProbability(next_slot), 1000.0 / 1001);
  for (int i = 0; i < 1000; ++i) {
    throttle.Answered(kStart + absl::Microseconds(i), absl::StatusCode::kOk);
  }
  EXPECT_EQ(throttle.RefusalProbability(next_slot), 0);
}

// Offered 3x what a server accepts each second (the server refuses the
// rest), a throttled client sends it about k times what it accepts, and
// the server stays saturated (at k = 1 it need not: the client then sends
// about what was accepted, and a lull lowers both).
TEST(AdaptiveThrottleTest, AServerSeesAboutKTimesWhatItAccepts) {
  for (const double k : {1.5, 2.0, 3.0}) {
    AdaptiveThrottle throttle(WithK(k));
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> draw(0, 1);
    constexpr int kCapacityPerSecond = 1000;
    int64_t sent = 0, accepted = 0;
    for (int second = 0; second < 60; ++second) {
      int accepted_this_second = 0;
      for (int i = 0; i < 3 * kCapacityPerSecond; ++i) {
        const absl::Time t =
            kStart + absl::Seconds(second) + absl::Microseconds(333 * i);
        if (!throttle.Admit(t, draw(rng))) continue;
        const bool accept = accepted_this_second < kCapacityPerSecond;
        accepted_this_second += accept;
        throttle.Answered(t, accept ? absl::StatusCode::kOk
                                    : absl::StatusCode::kResourceExhausted);
        // Counted after the first window, once the throttle has settled.
        if (second >= 10) {
          ++sent;
          accepted += accept;
        }
      }
    }
    EXPECT_EQ(accepted, 50 * kCapacityPerSecond) << "k " << k;
    EXPECT_NEAR(static_cast<double>(sent) / accepted, k, 0.05 * k) << "k " << k;
  }
}

}  // namespace
}  // namespace tessera
