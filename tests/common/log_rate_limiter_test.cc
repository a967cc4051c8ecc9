#include "common/log_rate_limiter.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

// Two per second: the third and fourth events of a second are left out,
// and the first event logged after them says so.
TEST(LogRateLimiterTest, LogsAFewPerPeriodAndCountsTheRest) {
  FakeClock clock;
  LogRateLimiter limiter(2, absl::Seconds(1), &clock);
  int64_t suppressed = -1;
  EXPECT_TRUE(limiter.Allow(&suppressed));
  EXPECT_EQ(suppressed, 0);
  EXPECT_TRUE(limiter.Allow(&suppressed));
  EXPECT_FALSE(limiter.Allow(&suppressed));
  EXPECT_FALSE(limiter.Allow(&suppressed));
  clock.Advance(absl::Milliseconds(999));
  EXPECT_FALSE(limiter.Allow(&suppressed));
  clock.Advance(absl::Milliseconds(1));
  EXPECT_TRUE(limiter.Allow(&suppressed));
  EXPECT_EQ(suppressed, 3);
  EXPECT_TRUE(limiter.Allow(&suppressed));
  EXPECT_EQ(suppressed, 0);
}

}  // namespace
}  // namespace tessera
