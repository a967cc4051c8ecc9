#include "common/poll_governor.h"

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

absl::Duration Us(int64_t us) { return absl::Microseconds(us); }

PollOptions Options(int64_t window_us, double idle_budget) {
  PollOptions options;
  options.window = Us(window_us);
  options.idle_budget = idle_budget;
  options.period = absl::Seconds(1);
  return options;
}

// Waits in a row, the time advancing by each wait.
class Waits {
 public:
  explicit Waits(const PollOptions& options) : governor_(options) {}
  // One wait whose event comes `gap` after it starts; returns its poll.
  absl::Duration Wait(absl::Duration gap) {
    const absl::Duration poll = governor_.StartWait(now_);
    now_ += gap;
    governor_.EndWait(gap);
    return poll;
  }
  void Advance(absl::Duration d) { now_ += d; }
  const PollGovernor& governor() const { return governor_; }

 private:
  PollGovernor governor_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST(PollGovernorTest, NoWindowNeverPolls) {
  Waits waits(Options(0, 1));
  EXPECT_EQ(waits.Wait(Us(10)), absl::ZeroDuration());
  EXPECT_EQ(waits.Wait(Us(10)), absl::ZeroDuration());
}

TEST(PollGovernorTest, PollsWhileEventsComeWithinTheWindow) {
  Waits waits(Options(2000, 1));
  EXPECT_EQ(waits.Wait(Us(5000)), Us(2000)) << "the first wait polls";
  EXPECT_EQ(waits.Wait(Us(300)), absl::ZeroDuration())
      << "after a gap longer than the window the next wait sleeps";
  EXPECT_EQ(waits.Wait(Us(2000)), Us(2000)) << "after a 300 us gap it polls";
  EXPECT_EQ(waits.Wait(Us(2001)), Us(2000)) << "a 2000 us gap is within";
  EXPECT_EQ(waits.Wait(Us(10)), absl::ZeroDuration()) << "2001 us is not";
}

TEST(PollGovernorTest, OnlyPollsThatFindNothingSpendTheBudget) {
  // 1 % of a second: 10 ms of polls that find nothing.
  Waits waits(Options(2000, 0.01));
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(waits.Wait(Us(1500)), Us(2000)) << "found while polling";
  }
  EXPECT_EQ(waits.governor().idle_polled(), absl::ZeroDuration());
  // Each event now comes at 2000 us: the poll ran its length, then slept.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(waits.Wait(Us(2000)), Us(2000));
  EXPECT_EQ(waits.governor().idle_polled(), absl::Milliseconds(10));
  EXPECT_EQ(waits.Wait(Us(100)), absl::ZeroDuration()) << "budget spent";
  EXPECT_EQ(waits.Wait(Us(100)), absl::ZeroDuration());
}

TEST(PollGovernorTest, NoIdleBudgetNeverPolls) {
  Waits waits(Options(2000, 0));
  EXPECT_EQ(waits.Wait(Us(10)), absl::ZeroDuration());
  EXPECT_EQ(waits.Wait(Us(10)), absl::ZeroDuration());
}

TEST(PollGovernorTest, TheLastPollOfAPeriodGetsWhatIsLeft) {
  Waits waits(Options(2000, 0.003));  // 3 ms per second
  EXPECT_EQ(waits.Wait(Us(2000)), Us(2000));
  EXPECT_EQ(waits.Wait(Us(1000)), Us(1000)) << "1 ms left";
  EXPECT_EQ(waits.Wait(Us(100)), absl::ZeroDuration());
}

TEST(PollGovernorTest, ANewPeriodRenewsTheBudget) {
  Waits waits(Options(2000, 0.002));  // 2 ms per second
  EXPECT_EQ(waits.Wait(Us(2000)), Us(2000));
  EXPECT_EQ(waits.Wait(Us(100)), absl::ZeroDuration());
  waits.Advance(absl::Milliseconds(997));
  EXPECT_EQ(waits.Wait(Us(100)), absl::ZeroDuration()) << "999.1 ms on";
  waits.Advance(absl::Milliseconds(1));
  EXPECT_EQ(waits.Wait(Us(100)), Us(2000)) << "a second after the first";
  EXPECT_EQ(waits.governor().idle_polled(), absl::ZeroDuration());
}

TEST(PollGovernorTest, MakePollOptionsChecksTheFlags) {
  auto ok = MakePollOptions(2000, 5);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->window, Us(2000));
  EXPECT_DOUBLE_EQ(ok->idle_budget, 0.05);
  auto negative = MakePollOptions(-1, 5, "proxy_");
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.status().message(), HasSubstr("--proxy_poll_us"));
  auto percent = MakePollOptions(2000, 101, "proxy_");
  EXPECT_EQ(percent.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(percent.status().message(),
              HasSubstr("--poll_idle_percent must be"));
}

}  // namespace
}  // namespace tessera
