#include "backend/restart_budget.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

using Verdict = RestartBudget::Verdict;

TEST(RestartBudgetTest, BacksOffThenGivesUpOnACrashLoop) {
  RestartBudget::Options o;
  o.initial_backoff = absl::Milliseconds(200);
  o.max_backoff = absl::Milliseconds(500);
  o.max_restarts = 3;
  o.window = absl::Seconds(10);
  RestartBudget budget(o);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  // The first exit restarts at once; the next waits 200 ms, then 400 ms.
  EXPECT_EQ(budget.Check("g", t0), Verdict::kRestart);
  EXPECT_EQ(budget.Check("g", t0 + absl::Milliseconds(100)), Verdict::kWait);
  EXPECT_EQ(budget.Check("g", t0 + absl::Milliseconds(200)), Verdict::kRestart);
  EXPECT_EQ(budget.Check("g", t0 + absl::Milliseconds(500)), Verdict::kWait);
  EXPECT_EQ(budget.Check("g", t0 + absl::Milliseconds(600)), Verdict::kRestart);
  // Three restarts within the window: a crash loop.
  EXPECT_EQ(budget.RecentRestarts("g", t0 + absl::Seconds(1)), 3);
  EXPECT_EQ(budget.Check("g", t0 + absl::Seconds(5)), Verdict::kGiveUp);
  // Another gpulet has its own budget.
  EXPECT_EQ(budget.Check("h", t0 + absl::Seconds(5)), Verdict::kRestart);
  // Restarts age out of the window; a new plan resets everything.
  EXPECT_EQ(budget.Check("g", t0 + absl::Seconds(11)), Verdict::kRestart);
  budget.Reset();
  EXPECT_EQ(budget.RecentRestarts("g", t0 + absl::Seconds(11)), 0);
}

TEST(RestartBudgetTest, BackoffDoublesUpToItsCap) {
  RestartBudget::Options o;
  o.initial_backoff = absl::Milliseconds(100);
  o.max_backoff = absl::Milliseconds(300);
  o.max_restarts = 10;
  RestartBudget budget(o);
  absl::Time t = absl::FromUnixSeconds(0);
  ASSERT_EQ(budget.Check("g", t), Verdict::kRestart);
  // Waits 100, 200, then 300 ms (capped) between restarts.
  for (int ms : {100, 200, 300, 300}) {
    EXPECT_EQ(budget.Check("g", t + absl::Milliseconds(ms - 1)), Verdict::kWait)
        << ms;
    t += absl::Milliseconds(ms);
    EXPECT_EQ(budget.Check("g", t), Verdict::kRestart) << ms;
  }
}

TEST(RestartBudgetTest, SortRestartsWaitsAndReportsAGiveUpOnce) {
  RestartBudget::Options o;
  o.initial_backoff = absl::Milliseconds(100);
  o.max_restarts = 1;
  o.window = absl::Seconds(10);
  RestartBudget budget(o);
  const absl::Time t0 = absl::FromUnixSeconds(0);
  RestartBudget::Triage first = budget.Sort({"a", "b"}, t0);
  EXPECT_EQ(first.restart, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(first.given_up.empty());
  // Both used their one restart: "a" exits again and is given up, once.
  RestartBudget::Triage second = budget.Sort({"a"}, t0 + absl::Seconds(1));
  EXPECT_TRUE(second.restart.empty());
  EXPECT_EQ(second.given_up, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(budget.Sort({"a"}, t0 + absl::Seconds(2)).given_up.empty());
  // A new plan: "a" may restart, and is reported again if it loops.
  budget.Reset();
  EXPECT_EQ(budget.Sort({"a"}, t0 + absl::Seconds(3)).restart,
            (std::vector<std::string>{"a"}));
  EXPECT_EQ(budget.Sort({"a"}, t0 + absl::Seconds(4)).given_up,
            (std::vector<std::string>{"a"}));
}

}  // namespace
}  // namespace tessera
