#include "common/async_call.h"

#include <time.h>

#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/backlog_bound.h"
#include "common/clock.h"
#include "grpcpp/alarm.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// The loop thread's CPU time so far (read on that thread).
absl::Duration ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return absl::DurationFromTimespec(ts);
}

// Events (alarms) at fixed offsets from the start on one completion queue;
// each records the loop thread's CPU time when the loop runs it. The queue
// shuts down after the last one.
class TimedEvents {
 public:
  explicit TimedEvents(std::vector<absl::Duration> offsets)
      : offsets_(std::move(offsets)) {}

  // Runs the loop with `poll` until every event ran; returns the loop's
  // CPU time between consecutive events (size offsets - 1).
  std::vector<absl::Duration> Run(const PollOptions& poll) {
    const absl::Time start = absl::Now();
    for (absl::Duration offset : offsets_) {
      events_.push_back(std::make_unique<Event>(this));
      events_.back()->alarm.Set(&cq_, absl::ToChronoTime(start + offset),
                                events_.back().get());
    }
    std::thread loop([this, poll] { RunCompletionQueue(&cq_, poll); });
    loop.join();  // returns once the last event shut the queue down
    std::vector<absl::Duration> between;
    for (size_t i = 1; i < cpu_.size(); ++i) {
      between.push_back(cpu_[i] - cpu_[i - 1]);
    }
    return between;
  }

 private:
  struct Event final : AsyncTag {
    explicit Event(TimedEvents* owner) : owner(owner) {}
    void Proceed(bool ok) override {
      EXPECT_TRUE(ok);
      owner->cpu_.push_back(ThreadCpu());
      if (owner->cpu_.size() == owner->offsets_.size()) owner->cq_.Shutdown();
    }
    TimedEvents* owner;
    grpc::Alarm alarm;
  };

  const std::vector<absl::Duration> offsets_;
  grpc::CompletionQueue cq_;
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<absl::Duration> cpu_;  // only the loop thread touches it
};

absl::Duration Ms(int64_t ms) { return absl::Milliseconds(ms); }

PollOptions Window(absl::Duration window, double idle_budget = 1) {
  PollOptions poll;
  poll.window = window;
  poll.idle_budget = idle_budget;
  return poll;
}

absl::Duration Sum(const std::vector<absl::Duration>& durations) {
  absl::Duration sum;
  for (absl::Duration d : durations) sum += d;
  return sum;
}

// Without polling the loop sleeps between events: almost no CPU.
TEST(RunCompletionQueueTest, SleepsBetweenEventsByDefault) {
  TimedEvents events({Ms(20), Ms(35), Ms(50), Ms(65)});
  for (absl::Duration cpu : events.Run(PollOptions())) {
    EXPECT_LT(cpu, Ms(5));
  }
}

// With a 30 ms window the loop polls after an event that came within the
// window of the one before (close traffic), and only for the window; after
// a longer gap it sleeps at once (sparse traffic costs no polling).
// Lower bounds allow for a busy machine (the poll yields its core).
TEST(RunCompletionQueueTest, PollsOnlyWhileEventsComeWithinTheWindow) {
  TimedEvents events({Ms(60), Ms(160), Ms(175), Ms(190), Ms(290)});
  const std::vector<absl::Duration> cpu = events.Run(Window(Ms(30)));
  ASSERT_EQ(cpu.size(), 4u);
  EXPECT_LT(cpu[0], Ms(8)) << "after a 60 ms gap the loop must sleep";
  EXPECT_LT(cpu[1], Ms(8)) << "after a 100 ms gap the loop must sleep";
  EXPECT_GE(cpu[2], Ms(4)) << "after a 15 ms gap the loop must poll";
  EXPECT_GE(cpu[3], Ms(8)) << "it polls up to the window";
  EXPECT_LT(cpu[3], Ms(60)) << "then sleeps (the next event is 100 ms off)";
}

// Pairs of events 1 ms apart, 40 ms between pairs: after the second event
// of a pair the loop polls its whole 30 ms window for nothing. Without a
// bound that is about 30 of every 40 ms; with a 10 % idle budget per
// 200 ms period, the polls that find nothing stop at 20 ms per period.
TEST(RunCompletionQueueTest, PollsThatFindNothingStayWithinTheIdleBudget) {
  std::vector<absl::Duration> offsets;
  for (int pair = 0; pair < 30; ++pair) {
    offsets.push_back(Ms(20 + 40 * pair));
    offsets.push_back(Ms(21 + 40 * pair));
  }
  PollOptions bounded = Window(Ms(30), 0.1);
  bounded.period = Ms(200);
  const absl::Duration unbounded_cpu =
      Sum(TimedEvents(offsets).Run(Window(Ms(30))));
  const absl::Duration bounded_cpu = Sum(TimedEvents(offsets).Run(bounded));
  std::cout << "[ info ] loop CPU over 1.2 s: " << unbounded_cpu
            << " without a bound, " << bounded_cpu << " with 10 %\n";
  // At most 7 periods x 20 ms of idle polls, plus the 30 polls that found
  // their event within 1 ms. (The unbounded bound allows for a busy
  // machine: the poll yields its core.)
  EXPECT_LT(bounded_cpu, Ms(250));
  EXPECT_GT(unbounded_cpu, Ms(350));
}

// Events that each take `busy` on the loop thread and record the backlog
// bound when the loop hands them over.
class BusyEvents {
 public:
  // Runs `offsets.size()` events due at those offsets from now; returns the
  // bound each saw.
  std::vector<absl::Duration> Run(const std::vector<absl::Duration>& offsets,
                                  absl::Duration busy,
                                  const PollOptions& poll) {
    const absl::Time start = absl::Now();
    expected_ = offsets.size();
    busy_ = busy;
    for (absl::Duration offset : offsets) {
      events_.push_back(std::make_unique<Event>(this));
      events_.back()->alarm.Set(&cq_, absl::ToChronoTime(start + offset),
                                events_.back().get());
    }
    // The events due at once are queued before the loop starts.
    absl::SleepFor(Ms(5));
    std::thread loop(
        [this, poll] { RunCompletionQueue(&cq_, poll, &backlog_); });
    loop.join();
    return bounds_;
  }

 private:
  struct Event final : AsyncTag {
    explicit Event(BusyEvents* owner) : owner(owner) {}
    void Proceed(bool ok) override {
      EXPECT_TRUE(ok);
      owner->bounds_.push_back(owner->backlog_.Bound());
      absl::SleepFor(owner->busy_);
      if (owner->bounds_.size() == owner->expected_) owner->cq_.Shutdown();
    }
    BusyEvents* owner;
    grpc::Alarm alarm;
  };

  size_t expected_ = 0;
  absl::Duration busy_;
  grpc::CompletionQueue cq_;
  BacklogBound backlog_{RealClock::Get()};
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<absl::Duration> bounds_;  // only the loop thread touches it
};

// Three events queued together, 10 ms of work each: the loop never finds
// its queue empty between them, so the third may have waited 20 ms. An
// event 150 ms later finds a loop that slept with nothing queued: the
// sleep is not backlog.
TEST(RunCompletionQueueTest, BacklogBoundCountsBusyTimeNotIdleTime) {
  for (const PollOptions& poll : {PollOptions(), Window(Ms(2))}) {
    BusyEvents events;
    const std::vector<absl::Duration> bounds =
        events.Run({Ms(0), Ms(0), Ms(0), Ms(150)}, Ms(10), poll);
    ASSERT_EQ(bounds.size(), 4u);
    EXPECT_GE(bounds[1], Ms(10));
    EXPECT_GE(bounds[2], Ms(20));
    EXPECT_LT(bounds[3], Ms(50)) << "the wait for the last event is idle";
  }
}

}  // namespace
}  // namespace tessera
