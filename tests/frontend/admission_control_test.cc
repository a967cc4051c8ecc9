#include "frontend/admission_control.h"

#include <utility>
#include <vector>

#include "common/backlog_bound.h"
#include "common/clock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

AdmissionControl::Options Limits(int64_t requests, int64_t bytes,
                                 int64_t per_model) {
  AdmissionControl::Options options;
  options.max_requests = requests;
  options.max_bytes = bytes;
  options.max_requests_per_model = per_model;
  options.per_request_overhead_bytes = 100;
  return options;
}

TEST(AdmissionControlTest, RefusesBeyondTheCallLimitAndAdmitsAfterRelease) {
  AdmissionControl admission(Limits(2, 0, 0));
  auto a = admission.Admit("lenet", 10);
  auto b = admission.Admit("bert_tiny", 10);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  auto c = admission.Admit("lenet", 10);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("limit 2"), std::string::npos)
      << c.status();
  a->Reset();
  EXPECT_TRUE(admission.Admit("lenet", 10).ok());
  EXPECT_EQ(admission.usage().refused, 1);
}

TEST(AdmissionControlTest, CountsBytesWithThePerCallOverhead) {
  AdmissionControl admission(Limits(0, 1000, 0));
  auto a = admission.Admit("m", 400);  // 500 with the overhead
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(admission.usage().bytes, 500);
  EXPECT_TRUE(admission.Admit("m", 400).ok());  // released at once: 500
  auto held = admission.Admit("m", 400);        // 1000: the budget
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(admission.Admit("m", 0).status().code(),
            absl::StatusCode::kResourceExhausted);
  // A request the budget could never hold says so.
  auto huge = admission.Admit("m", 5000);
  ASSERT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("exceeds"), std::string::npos);
}

TEST(AdmissionControlTest, OneFloodedModelCannotTakeTheWholeBudget) {
  AdmissionControl admission(Limits(10, 0, 3));
  std::vector<AdmissionControl::Ticket> flood;
  int refused = 0;
  for (int i = 0; i < 8; ++i) {
    auto t = admission.Admit("lenet", 1);
    if (t.ok()) {
      flood.push_back(std::move(*t));
    } else {
      ++refused;
      EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted);
    }
  }
  EXPECT_EQ(flood.size(), 3u);
  EXPECT_EQ(refused, 5);
  EXPECT_TRUE(admission.Admit("bert_tiny", 1).ok());
  const AdmissionControl::Usage usage = admission.usage();
  EXPECT_EQ(usage.requests, 3);
  EXPECT_EQ(usage.requests_per_model.at("lenet"), 3);
  EXPECT_EQ(usage.requests_per_model.count("bert_tiny"), 0u);
}

TEST(AdmissionControlTest, TicketsGiveTheBudgetBackOnceWhenMovedOrDestroyed) {
  AdmissionControl admission(Limits(1, 0, 0));
  {
    auto a = admission.Admit("m", 1);
    ASSERT_TRUE(a.ok());
    AdmissionControl::Ticket moved = std::move(*a);
    EXPECT_TRUE(moved.held());
    EXPECT_FALSE(a->held());
    AdmissionControl::Ticket assigned;
    assigned = std::move(moved);
    EXPECT_EQ(admission.usage().requests, 1);
  }
  EXPECT_EQ(admission.usage().requests, 0);
  EXPECT_EQ(admission.usage().bytes, 0);
  EXPECT_TRUE(admission.Admit("m", 1).ok());
}

TEST(AdmissionControlTest, ZeroMeansNoLimit) {
  AdmissionControl admission(Limits(0, 0, 0));
  std::vector<AdmissionControl::Ticket> held;
  for (int i = 0; i < 1000; ++i) {
    auto t = admission.Admit("m", 1 << 20);
    ASSERT_TRUE(t.ok());
    held.push_back(std::move(*t));
  }
  EXPECT_EQ(admission.usage().requests, 1000);
}

// SLO 50 ms, share 0.5: a call is refused once it waited 25 ms in gRPC,
// by its deadline (a client with a 5 s timeout whose earlier call showed
// 5 s left), and only while the event loops have been busy that long.
TEST(AdmissionControlTest, RefusesCallsThatWaitedAShareOfTheirSlo) {
  FakeClock clock;
  BacklogBound backlog(&clock);
  AdmissionControl::Options options = Limits(0, 0, 0);
  options.max_backlog_slo_fraction = 0.5;
  AdmissionControl admission(options, &backlog);
  const absl::Duration slo = absl::Milliseconds(50);
  const absl::Duration timeout = absl::Seconds(5);
  auto check = [&](absl::Duration waited) {
    const absl::Time now = clock.Now();
    return admission.CheckBacklog(slo, "peer/lenet", now - waited + timeout,
                                  now);
  };
  EXPECT_TRUE(check(absl::ZeroDuration()).ok());  // learns the timeout
  clock.Advance(absl::Milliseconds(30));          // the loops stay busy
  EXPECT_TRUE(check(absl::Milliseconds(24)).ok());
  const absl::Status refused = check(absl::Milliseconds(26));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("waited about 26 ms"), std::string::npos)
      << refused;
  // A model with a 100 ms SLO may wait 50 ms.
  EXPECT_TRUE(admission
                  .CheckBacklog(absl::Milliseconds(100), "peer/lenet",
                                clock.Now() - absl::Milliseconds(26) + timeout,
                                clock.Now())
                  .ok());
  // The loops rested 10 ms ago: no call can have waited 26 ms, whatever
  // its deadline says (a client that also sends shorter timeouts).
  clock.Advance(absl::Milliseconds(5));
  backlog.MarkEmpty();
  clock.Advance(absl::Milliseconds(10));
  EXPECT_TRUE(check(absl::Milliseconds(26)).ok());
  EXPECT_EQ(admission.usage().refused, 1);
  EXPECT_EQ(admission.usage().refused_for_backlog, 1);
}

TEST(AdmissionControlTest, BacklogCheckOffAtZeroShareOrWithoutABound) {
  FakeClock clock;
  BacklogBound backlog(&clock);
  AdmissionControl::Options options = Limits(0, 0, 0);
  options.max_backlog_slo_fraction = 0;
  AdmissionControl off(options, &backlog);
  AdmissionControl unbound(Limits(0, 0, 0));
  clock.Advance(absl::Seconds(10));
  for (AdmissionControl* a : {&off, &unbound}) {
    const absl::Time now = clock.Now();
    EXPECT_TRUE(a->CheckBacklog(absl::Milliseconds(50), "p/m",
                                now + absl::Seconds(5), now)
                    .ok());
    EXPECT_TRUE(a->CheckBacklog(absl::Milliseconds(50), "p/m",
                                now + absl::Seconds(1), now)
                    .ok());
  }
}

TEST(AdmissionControlTest, RefusesWhileTheQueueAheadWaitedAShareOfTheSlo) {
  AdmissionControl::Options options = Limits(0, 0, 0);
  options.max_queue_slo_fraction = 0.5;
  AdmissionControl admission(options);
  const absl::Duration slo = absl::Milliseconds(100);
  EXPECT_TRUE(admission.CheckQueue(slo, absl::Milliseconds(49)).ok());
  absl::Status refused = admission.CheckQueue(slo, absl::Milliseconds(50));
  ASSERT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("waited 50 ms (limit 50 ms"),
            std::string::npos)
      << refused;
  EXPECT_EQ(admission.usage().refused, 1);
  EXPECT_EQ(admission.usage().refused_for_queue, 1);
  EXPECT_EQ(admission.usage().refused_for_backlog, 0);

  options.max_queue_slo_fraction = 0;  // off
  AdmissionControl off(options);
  EXPECT_TRUE(off.CheckQueue(slo, absl::Seconds(10)).ok());
}

}  // namespace
}  // namespace tessera
