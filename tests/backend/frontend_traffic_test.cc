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
  // No frontend heartbeat ever came: nothing routes here but batches.
  EXPECT_TRUE(traffic.AwaitQuiet(absl::Milliseconds(100), absl::Seconds(3),
                                 start + absl::Seconds(10)));
  EXPECT_TRUE(traffic.draining());
  // It waited for the quiet period, counted from the call at the earliest.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(100));
}

// A frontend that still routes here (its re-plan is not in force yet) holds
// the drain however long the gap between batches, until its heartbeat
// says the plan in force sends nothing here.
TEST(FrontendTrafficTest, AQuietGapIsNotEnoughWhileTheFrontendRoutesHere) {
  FrontendTraffic traffic(RealClock::Get());
  const absl::Time start = absl::Now();
  // Routed from the start, however late the thread below begins.
  traffic.RecordHeartbeat(/*unrouted=*/false);
  std::atomic<bool> done{false};
  std::thread frontend([&] {
    while (absl::Now() - start < absl::Milliseconds(400)) {
      traffic.RecordHeartbeat(/*unrouted=*/false);
      absl::SleepFor(absl::Milliseconds(20));
    }
    while (!done.load()) {
      traffic.RecordHeartbeat(/*unrouted=*/true);
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  EXPECT_TRUE(traffic.AwaitQuiet(absl::Milliseconds(50), absl::Seconds(3),
                                 start + absl::Seconds(10)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(400));
  done.store(true);
  frontend.join();
}

// A frontend that stopped calling (it died) no longer holds the drain.
TEST(FrontendTrafficTest, AFrontendThatFellSilentNoLongerHoldsTheDrain) {
  FrontendTraffic traffic(RealClock::Get());
  const absl::Time start = absl::Now();
  traffic.RecordHeartbeat(/*unrouted=*/false);
  EXPECT_FALSE(traffic.AwaitQuiet(absl::Milliseconds(20),
                                  absl::Milliseconds(300),
                                  start + absl::Milliseconds(150)));
  EXPECT_TRUE(traffic.AwaitQuiet(absl::Milliseconds(20),
                                 absl::Milliseconds(300),
                                 start + absl::Seconds(10)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
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
  EXPECT_FALSE(traffic.AwaitQuiet(absl::Milliseconds(200), absl::Seconds(3),
                                  absl::Now() + absl::Milliseconds(600)));
  done.store(true);
  sender.join();
}

}  // namespace
}  // namespace tessera
