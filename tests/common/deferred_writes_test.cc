#include "common/deferred_writes.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/async_call.h"
#include "common/backlog_bound.h"
#include "common/clock.h"
#include "grpcpp/alarm.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// Appends `name` to a log when flushed.
class LoggingWriter final : public DeferredWrites::Writer {
 public:
  LoggingWriter(std::string name, std::vector<std::string>* log)
      : name_(std::move(name)), log_(log) {}
  void FlushDeferred() override { log_->push_back(name_); }

 private:
  const std::string name_;
  std::vector<std::string>* const log_;
};

TEST(DeferredWritesTest, BelongsToTheThreadOfItsScope) {
  EXPECT_EQ(DeferredWrites::OfThisThread(), nullptr);
  DeferredWrites writes;
  {
    DeferredWrites::Scope scope(&writes);
    EXPECT_EQ(DeferredWrites::OfThisThread(), &writes);
    DeferredWrites* seen_elsewhere = &writes;
    std::thread([&] {
      seen_elsewhere = DeferredWrites::OfThisThread();
    }).join();
    EXPECT_EQ(seen_elsewhere, nullptr);
  }
  EXPECT_EQ(DeferredWrites::OfThisThread(), nullptr);
}

// In order; a writer deferred during a flush waits for the next one.
TEST(DeferredWritesTest, FlushesInOrderAndKeepsWhatTheFlushDefers) {
  std::vector<std::string> log;
  DeferredWrites writes;
  class Redeferring final : public DeferredWrites::Writer {
   public:
    Redeferring(DeferredWrites* writes, std::vector<std::string>* log)
        : writes_(writes), log_(log) {}
    void FlushDeferred() override {
      log_->push_back("again");
      if (log_->size() < 4) {
        writes_->Defer(std::make_shared<LoggingWriter>("later", log_));
      }
    }

   private:
    DeferredWrites* const writes_;
    std::vector<std::string>* const log_;
  };
  writes.Defer(std::make_shared<LoggingWriter>("a", &log));
  writes.Defer(std::make_shared<Redeferring>(&writes, &log));
  writes.Defer(std::make_shared<LoggingWriter>("b", &log));
  writes.FlushAll();
  EXPECT_EQ(log, (std::vector<std::string>{"a", "again", "b"}));
  EXPECT_FALSE(writes.empty());
  writes.FlushAll();
  EXPECT_EQ(log, (std::vector<std::string>{"a", "again", "b", "later"}));
  EXPECT_TRUE(writes.empty());
}

TEST(DeferredWritesTest, FlushesAfterItsEvents) {
  std::vector<std::string> log;
  DeferredWrites writes;
  for (int i = 0; i < 10; ++i) writes.CountEvent();  // nothing deferred
  writes.Defer(std::make_shared<LoggingWriter>("w", &log));
  for (int i = 1; i < DeferredWrites::kMaxEventsHeld; ++i) {
    writes.CountEvent();
    ASSERT_TRUE(log.empty()) << "flushed after " << i << " events";
  }
  writes.CountEvent();
  EXPECT_EQ(log, std::vector<std::string>{"w"});
  EXPECT_TRUE(writes.empty());
}

// Events on one completion queue (alarms), named by the order the loop
// runs them in (alarms due together come in any order); the n-th event run
// logs "en", and defers a writer of its loop that logs "flushn" if
// `defer[n - 1]`.
class LoopEvents {
 public:
  // Runs events due at `offsets` from now (those at zero are queued
  // before the loop starts); returns the log of events and flushes.
  std::vector<std::string> Run(const std::vector<absl::Duration>& offsets,
                               std::vector<bool> defer) {
    defer_ = std::move(defer);
    const absl::Time start = absl::Now();
    for (absl::Duration offset : offsets) {
      events_.push_back(std::make_unique<Event>(this));
      events_.back()->alarm.Set(&cq_, absl::ToChronoTime(start + offset),
                                events_.back().get());
    }
    absl::SleepFor(absl::Milliseconds(50));
    std::thread loop(
        [this] { RunCompletionQueue(&cq_, PollOptions(), &backlog_, true); });
    loop.join();
    return log_;
  }

 private:
  struct Event final : AsyncTag {
    explicit Event(LoopEvents* owner) : owner(owner) {}
    void Proceed(bool ok) override {
      EXPECT_TRUE(ok);
      const size_t number = ++owner->run_;
      owner->log_.push_back(absl::StrCat("e", number));
      if (owner->defer_[number - 1]) {
        DeferredWrites* writes = DeferredWrites::OfThisThread();
        ASSERT_NE(writes, nullptr);
        writes->Defer(std::make_shared<LoggingWriter>(
            absl::StrCat("flush", number), &owner->log_));
      }
      if (number == owner->events_.size()) owner->cq_.Shutdown();
    }
    LoopEvents* owner;
    grpc::Alarm alarm;
  };

  grpc::CompletionQueue cq_;
  BacklogBound backlog_{RealClock::Get()};
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<bool> defer_;
  size_t run_ = 0;                // only the loop thread touches it
  std::vector<std::string> log_;  // likewise
};

// Three events queued together: what the first defers goes out once the
// queue runs dry, after the third, and before the loop sleeps (the fourth
// event comes 100 ms later).
TEST(RunCompletionQueueTest, FlushesDeferredWritesWhenTheQueueRunsDry) {
  const absl::Duration now = absl::ZeroDuration();
  const std::vector<std::string> log = LoopEvents().Run(
      {now, now, now, absl::Milliseconds(150), absl::Milliseconds(300)},
      {true, false, false, true, false});
  EXPECT_EQ(log, (std::vector<std::string>{"e1", "e2", "e3", "flush1", "e4",
                                           "flush4", "e5"}));
}

// A queue that never runs dry still flushes, after kMaxEventsHeld events.
TEST(RunCompletionQueueTest, FlushesDeferredWritesOfABusyLoop) {
  const int n = DeferredWrites::kMaxEventsHeld + 8;
  std::vector<absl::Duration> offsets(n, absl::ZeroDuration());
  std::vector<bool> defer(n, false);
  defer[0] = true;
  const std::vector<std::string> log = LoopEvents().Run(offsets, defer);
  ASSERT_EQ(log.size(), static_cast<size_t>(n + 1));
  EXPECT_EQ(log[DeferredWrites::kMaxEventsHeld], "flush1");
}

}  // namespace
}  // namespace tessera
