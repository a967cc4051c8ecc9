// FrontendTraffic: when a draining backend decides its frontend moved away.
#include "backend/frontend_traffic.h"

#include <thread>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(FrontendTrafficTest, QuietAfterTheLastBatchMeansTheFrontendLeft) {
  FrontendTraffic traffic(RealClock::Get());
  EXPECT_FALSE(traffic.draining());
  traffic.RecordBatch();
  const absl::Time start = absl::Now();
  EXPECT_TRUE(
      traffic.AwaitQuiet(absl::Milliseconds(100), start + absl::Seconds(10)));
  EXPECT_TRUE(traffic.draining());
  // It waited for the quiet period, counted from the call at the earliest.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(100));
}

TEST(FrontendTrafficTest, BatchesThatKeepComingRunIntoTheDeadline) {
  FrontendTraffic traffic(RealClock::Get());
  std::atomic<bool> done{false};
  std::thread sender([&] {
    while (!done.load()) {
      traffic.RecordBatch();
      absl::SleepFor(absl::Milliseconds(5));
    }
  });
  EXPECT_FALSE(traffic.AwaitQuiet(absl::Milliseconds(200),
                                  absl::Now() + absl::Milliseconds(600)));
  done.store(true);
  sender.join();
}

}  // namespace
}  // namespace tessera
