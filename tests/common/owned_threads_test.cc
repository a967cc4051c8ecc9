#include "common/owned_threads.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(OwnedThreadsTest, JoinAllWaitsForEveryThread) {
  std::atomic<int> ran{0};
  OwnedThreads threads;
  for (int i = 0; i < 8; ++i) {
    threads.Start([&ran] {
      absl::SleepFor(absl::Milliseconds(10));
      ++ran;
    });
  }
  threads.JoinAll();
  EXPECT_EQ(ran.load(), 8);
  EXPECT_EQ(threads.size(), 0);
}

TEST(OwnedThreadsTest, FinishedThreadsAreJoinedWhenTheNextStarts) {
  OwnedThreads threads;
  absl::Notification first_done;
  threads.Start([&first_done] { first_done.Notify(); });
  ASSERT_TRUE(first_done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // The first may still be returning; it is joined by a later Start once
  // it has marked itself done.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::Notification release;
  threads.Start([&release] {
    release.WaitForNotificationWithTimeout(absl::Seconds(30));
  });
  while (threads.size() > 1 && absl::Now() < deadline) {
    threads.Start([] {});
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_LE(threads.size(), 2);  // the blocked one and the latest
  release.Notify();
  threads.JoinAll();
  EXPECT_EQ(threads.size(), 0);
}

TEST(OwnedThreadsTest, DestructorJoins) {
  std::atomic<bool> ran{false};
  {
    OwnedThreads threads;
    threads.Start([&ran] {
      absl::SleepFor(absl::Milliseconds(20));
      ran = true;
    });
  }
  EXPECT_TRUE(ran.load());
}

}  // namespace
}  // namespace tessera
