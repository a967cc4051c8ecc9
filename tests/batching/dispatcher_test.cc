#include "batching/dispatcher.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

using absl::Milliseconds;

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() : clock_(absl::UnixEpoch()) {
    // L(b) = 10 ms * b for model "a", 2 ms * b for model "b".
    estimator_.Seed("a", 1, Milliseconds(10));
    estimator_.Seed("a", 8, Milliseconds(80));
    estimator_.Seed("b", 1, Milliseconds(2));
    estimator_.Seed("b", 8, Milliseconds(16));
  }

  std::unique_ptr<Dispatcher> Make(int cap_a, int cap_b, bool conserving,
                                   int max_inflight = 1) {
    Dispatcher::Options options;
    options.work_conserving = conserving;
    options.max_inflight_batches = max_inflight;
    options.initial_overhead = Milliseconds(1);
    options.exec_margin_fraction = 0.0;  // exact arithmetic in tests
    return std::make_unique<Dispatcher>(
        std::vector<Dispatcher::ModelSlot>{{"a", cap_a}, {"b", cap_b}},
        &estimator_, &clock_, options);
  }

  DispatchRequest Request(uint64_t id, int model, absl::Duration slo,
                          int items = 1) {
    DispatchRequest r;
    r.id = id;
    r.model = model;
    r.items = items;
    r.arrival = clock_.Now();
    r.deadline = clock_.Now() + slo;
    return r;
  }

  FakeClock clock_;
  LatencyEstimator estimator_;
};

TEST_F(DispatcherTest, FullBatchLeavesAtOnce) {
  auto d = Make(4, 4, /*conserving=*/false);
  for (uint64_t i = 1; i <= 4; ++i)
    d->Enqueue(Request(i, 0, Milliseconds(500)));
  auto decision = d->Poll();
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].items, 4);
  EXPECT_EQ(decision.batches[0].requests.front().id, 1u);
  EXPECT_EQ(d->queued(), 0u);
}

TEST_F(DispatcherTest, WaitsUntilOldestRequestsLatestSendTime) {
  auto d = Make(8, 8, /*conserving=*/false);
  d->Enqueue(Request(1, 0, Milliseconds(100)));
  auto decision = d->Poll();
  EXPECT_TRUE(decision.batches.empty());
  // deadline 100 - overhead 1 - L(1) 10 = 89 ms.
  EXPECT_EQ(decision.wake_at, absl::UnixEpoch() + Milliseconds(89));
  clock_.Advance(Milliseconds(50));
  d->Enqueue(Request(2, 0, Milliseconds(100)));
  decision = d->Poll();
  EXPECT_TRUE(decision.batches.empty());
  // Two queued: 100 - 1 - L(2) 20 = 79 ms.
  EXPECT_EQ(decision.wake_at, absl::UnixEpoch() + Milliseconds(79));
  clock_.Set(absl::UnixEpoch() + Milliseconds(79));
  decision = d->Poll();
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].items, 2);
  EXPECT_TRUE(decision.expired.empty());
}

// Rule (e), Triton's dynamic_batching delay: with a 20 ms bound the batch
// leaves when its oldest request has waited 20 ms, although its deadline
// would let it wait until 89 ms; the other model keeps waiting.
TEST_F(DispatcherTest, QueueDelayBoundSendsTheBatchWhenItsOldestHasWaited) {
  Dispatcher::Options options;
  options.work_conserving = false;
  options.max_inflight_batches = 1;
  options.initial_overhead = Milliseconds(1);
  options.exec_margin_fraction = 0.0;
  Dispatcher::ModelSlot a{"a", 8};
  a.max_queue_delay = Milliseconds(20);
  Dispatcher d({a, {"b", 8}}, &estimator_, &clock_, options);
  d.Enqueue(Request(1, 0, Milliseconds(100)));
  d.Enqueue(Request(2, 1, Milliseconds(100)));
  auto decision = d.Poll();
  EXPECT_TRUE(decision.batches.empty());
  EXPECT_EQ(decision.wake_at, absl::UnixEpoch() + Milliseconds(20));
  clock_.Advance(Milliseconds(5));
  d.Enqueue(Request(3, 0, Milliseconds(100)));
  clock_.Set(absl::UnixEpoch() + Milliseconds(19));
  EXPECT_TRUE(d.Poll().batches.empty());
  clock_.Set(absl::UnixEpoch() + Milliseconds(20));
  decision = d.Poll();
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].model, 0);
  EXPECT_EQ(decision.batches[0].items, 2);
  EXPECT_EQ(d.queued(), 1u);  // model b's request waits for its own rule
  // A zero bound: sent as soon as the gpulet can take it.
  d.OnBatchDone(decision.batches[0].batch_id, Milliseconds(20),
                Milliseconds(21), true);
  Dispatcher::ModelSlot zero{"a", 8};
  zero.max_queue_delay = absl::ZeroDuration();
  Dispatcher now({zero}, &estimator_, &clock_, options);
  now.Enqueue(Request(4, 0, Milliseconds(100)));
  decision = now.Poll();
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].items, 1);
}

TEST_F(DispatcherTest, WorkConservingSendsWhenIdle) {
  auto d = Make(8, 8, /*conserving=*/true);
  d->Enqueue(Request(1, 0, Milliseconds(500)));
  auto decision = d->Poll();
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].items, 1);
  // Busy now (max 1 in flight): the next request waits for the completion.
  d->Enqueue(Request(2, 0, Milliseconds(500)));
  d->Enqueue(Request(3, 0, Milliseconds(500)));
  EXPECT_TRUE(d->Poll().batches.empty());
  clock_.Advance(Milliseconds(11));
  d->OnBatchDone(decision.batches[0].batch_id, Milliseconds(10),
                 Milliseconds(11), true);
  decision = d->Poll();
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].items, 2);  // both waiting requests together
}

TEST_F(DispatcherTest, ExpiresRequestsThatCannotMeetTheirDeadline) {
  auto d = Make(8, 8, /*conserving=*/true);
  d->Enqueue(Request(1, 0, Milliseconds(5)));  // L(1) = 10 ms > 5 ms
  d->Enqueue(Request(2, 1, Milliseconds(5)));  // L(1) = 2 ms: fits
  auto decision = d->Poll();
  ASSERT_EQ(decision.expired.size(), 1u);
  EXPECT_EQ(decision.expired[0].id, 1u);
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].model, 1);
}

// The wait a new request finds ahead of it: the queue head's wait, or the
// last departure's (a batch: its oldest request's wait; an expiry: the
// expired request's whole budget) less the time since it left.
TEST_F(DispatcherTest, QueueWaitIsTheHeadsOrTheLastDeparturesLessTheTimeSince) {
  auto d = Make(4, 4, /*conserving=*/false);
  EXPECT_EQ(d->QueueWait(0, clock_.Now()), absl::ZeroDuration());
  d->Enqueue(Request(1, 0, Milliseconds(500)));
  clock_.Advance(Milliseconds(30));
  EXPECT_EQ(d->QueueWait(0, clock_.Now()), Milliseconds(30));
  EXPECT_EQ(d->QueueWait(1, clock_.Now()), absl::ZeroDuration());
  for (uint64_t i = 2; i <= 4; ++i) {
    d->Enqueue(Request(i, 0, Milliseconds(500)));
  }
  ASSERT_EQ(d->Poll().batches.size(), 1u);  // full: leaves, 30 ms waited
  EXPECT_EQ(d->QueueWait(0, clock_.Now()), Milliseconds(30));
  clock_.Advance(Milliseconds(10));
  EXPECT_EQ(d->QueueWait(0, clock_.Now()), Milliseconds(20));
  clock_.Advance(Milliseconds(30));
  EXPECT_EQ(d->QueueWait(0, clock_.Now()), absl::ZeroDuration());

  // Model b's request cannot make 1 ms (overhead 1 ms + L(1) 2 ms): it
  // expires at once, having waited nothing, and counts its 1 ms budget.
  d->Enqueue(Request(5, 1, Milliseconds(1)));
  ASSERT_EQ(d->Poll().expired.size(), 1u);
  EXPECT_EQ(d->QueueWait(1, clock_.Now()), Milliseconds(1));
  clock_.Advance(Milliseconds(1));
  EXPECT_EQ(d->QueueWait(1, clock_.Now()), absl::ZeroDuration());
}

// An inflated overhead estimate (200 ms, e.g. learned while the frontend
// was starved of CPU) would expire every 50 ms request for ever: no batch
// leaves, so none corrects it. With probing, one request per interval is
// sent anyway and its measured round trip brings the estimate back.
TEST_F(DispatcherTest, StaleEstimateIsProbedAndRecovers) {
  Dispatcher::Options options;
  options.max_inflight_batches = 2;
  options.initial_overhead = Milliseconds(200);
  options.exec_margin_fraction = 0.0;
  options.probe_interval = Milliseconds(100);
  Dispatcher d({{"a", 8}, {"b", 8}}, &estimator_, &clock_, options);
  d.Enqueue(Request(1, 1, Milliseconds(50)));
  auto first = d.Poll();  // nothing was sent yet, but the interval is not up
  EXPECT_EQ(first.expired.size(), 1u);
  EXPECT_TRUE(first.batches.empty());

  clock_.Advance(Milliseconds(150));
  d.Enqueue(Request(2, 1, Milliseconds(50)));
  d.Enqueue(Request(3, 1, Milliseconds(40)));
  auto probe = d.Poll();
  // The one with the most slack (id 2) is the probe; id 3 expires.
  ASSERT_EQ(probe.batches.size(), 1u);
  ASSERT_EQ(probe.batches[0].requests.size(), 1u);
  EXPECT_EQ(probe.batches[0].requests[0].id, 2u);
  ASSERT_EQ(probe.expired.size(), 1u);
  EXPECT_EQ(probe.expired[0].id, 3u);

  // At most one probe per interval.
  d.Enqueue(Request(4, 1, Milliseconds(50)));
  EXPECT_EQ(d.Poll().expired.size(), 1u);

  // Each measured round trip (3 ms for 2 ms of execution) pulls the
  // overhead down; once it is small, requests are served again.
  uint64_t batch = probe.batches[0].batch_id;
  for (int probes = 1;; ++probes) {
    d.OnBatchDone(batch, Milliseconds(2), Milliseconds(3), true);
    if (d.overhead() <= Milliseconds(40)) break;
    ASSERT_LT(probes, 30) << "the overhead estimate does not recover";
    clock_.Advance(Milliseconds(150));
    d.Enqueue(Request(100 + probes, 1, Milliseconds(50)));
    auto next = d.Poll();
    ASSERT_EQ(next.batches.size(), 1u);
    batch = next.batches[0].batch_id;
  }
  clock_.Advance(Milliseconds(1));
  for (uint64_t id = 200; id < 204; ++id) {
    d.Enqueue(Request(id, 1, Milliseconds(50)));
  }
  auto served = d.Poll();
  EXPECT_TRUE(served.expired.empty());
  ASSERT_FALSE(served.batches.empty());
}

// Without probing (the simulator's default), an estimate that says a
// request cannot make it is trusted: nothing is sent.
TEST_F(DispatcherTest, WithoutProbingAnInfeasibleRequestAlwaysExpires) {
  Dispatcher::Options options;
  options.initial_overhead = Milliseconds(200);
  Dispatcher d({{"a", 8}, {"b", 8}}, &estimator_, &clock_, options);
  clock_.Advance(absl::Seconds(10));
  d.Enqueue(Request(1, 1, Milliseconds(50)));
  auto decision = d.Poll();
  EXPECT_EQ(decision.expired.size(), 1u);
  EXPECT_TRUE(decision.batches.empty());
}

// Under a backlog, the oldest request that would force a small batch is
// shed (expired early) so that a full batch leaves.
TEST_F(DispatcherTest, BacklogShedsTheOldestForAFullBatch) {
  for (bool shed : {false, true}) {
    Dispatcher::Options options;
    options.work_conserving = false;
    options.max_inflight_batches = 1;
    options.initial_overhead = Milliseconds(1);
    options.exec_margin_fraction = 0.0;
    options.shed_oldest_in_backlog = shed;
    Dispatcher d({{"a", 4}, {"b", 4}}, &estimator_, &clock_, options);
    // A full batch (1 + 40 ms) misses the first request's 30 ms deadline.
    d.Enqueue(Request(1, 0, Milliseconds(30)));
    for (uint64_t i = 2; i <= 6; ++i) {
      d.Enqueue(Request(i, 0, Milliseconds(200)));
    }
    auto decision = d.Poll();
    ASSERT_EQ(decision.batches.size(), 1u);
    if (shed) {
      ASSERT_EQ(decision.expired.size(), 1u);
      EXPECT_EQ(decision.expired[0].id, 1u);
      EXPECT_EQ(decision.batches[0].items, 4);
      EXPECT_EQ(decision.batches[0].requests.front().id, 2u);
    } else {
      // Trimmed to meet the oldest deadline: 1 + 10 b <= 30 -> b = 2.
      EXPECT_TRUE(decision.expired.empty());
      EXPECT_EQ(decision.batches[0].items, 2);
    }
  }
}

TEST_F(DispatcherTest, TakesLargestBatchThatMeetsOldestDeadline) {
  auto d = Make(8, 8, /*conserving=*/false);
  // Oldest deadline 40 ms: 1 + 10 b <= 40 -> b = 3.
  d->Enqueue(Request(1, 0, Milliseconds(40)));
  for (uint64_t i = 2; i <= 8; ++i) {
    d->Enqueue(Request(i, 0, Milliseconds(400)));
  }
  auto decision = d->Poll();  // full (8 queued) -> leaves, trimmed to 3
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].items, 3);
  EXPECT_EQ(d->queued(), 5u);
}

TEST_F(DispatcherTest, EarliestDeadlineFirstAcrossModels) {
  auto d = Make(1, 1, /*conserving=*/true, /*max_inflight=*/1);
  d->Enqueue(Request(1, 0, Milliseconds(300)));
  d->Enqueue(Request(2, 1, Milliseconds(100)));
  auto decision = d->Poll();
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].requests[0].id, 2u);
}

TEST_F(DispatcherTest, RespectsMaxInflightAndLearnsOverhead) {
  auto d = Make(1, 1, /*conserving=*/false, /*max_inflight=*/2);
  for (uint64_t i = 1; i <= 3; ++i)
    d->Enqueue(Request(i, 0, Milliseconds(900)));
  auto decision = d->Poll();
  ASSERT_EQ(decision.batches.size(), 2u);
  EXPECT_EQ(d->inflight(), 2);
  EXPECT_EQ(d->queued(), 1u);
  // Round trip 15 ms for 10 ms of execution: overhead 1 -> 0.8*1 + 0.2*5.
  d->OnBatchDone(decision.batches[0].batch_id, Milliseconds(10),
                 Milliseconds(15), true);
  EXPECT_EQ(d->overhead(), Milliseconds(1.8));
  EXPECT_EQ(d->inflight(), 1);
  EXPECT_EQ(d->Poll().batches.size(), 1u);
}

TEST_F(DispatcherTest, RequestLargerThanCapGoesAlone) {
  auto d = Make(2, 2, /*conserving=*/false);
  d->Enqueue(Request(1, 0, Milliseconds(500), /*items=*/5));
  d->Enqueue(Request(2, 0, Milliseconds(500), /*items=*/1));
  auto decision = d->Poll();
  ASSERT_EQ(decision.batches.size(), 1u);
  EXPECT_EQ(decision.batches[0].items, 5);
  EXPECT_EQ(decision.batches[0].requests.size(), 1u);
}

TEST_F(DispatcherTest, DutyCycleSendsAModelsBatchEachRound) {
  // Not work-conserving, model "b" (L = 2 ms/item) with a 10 ms duty
  // cycle and a 500 ms SLO: rule (b) alone would hold a request for
  // ~496 ms; the duty cycle sends it one round after the previous batch.
  Dispatcher::Options options;
  options.work_conserving = false;
  options.max_inflight_batches = 1;
  options.initial_overhead = Milliseconds(1);
  options.exec_margin_fraction = 0;
  Dispatcher d({{"a", 8}, {"b", 8, Milliseconds(10)}}, &estimator_, &clock_,
               options);
  d.Enqueue(Request(1, 1, Milliseconds(500)));
  auto first = d.Poll();  // never sent before: the round is due at once
  ASSERT_EQ(first.batches.size(), 1u);
  clock_.Advance(Milliseconds(3));
  d.OnBatchDone(first.batches[0].batch_id, Milliseconds(2), Milliseconds(3),
                true);
  d.Enqueue(Request(2, 1, Milliseconds(500)));
  d.Enqueue(Request(3, 1, Milliseconds(500)));
  auto waiting = d.Poll();
  EXPECT_TRUE(waiting.batches.empty());
  EXPECT_EQ(waiting.wake_at, absl::UnixEpoch() + Milliseconds(10));
  clock_.Set(absl::UnixEpoch() + Milliseconds(10));
  auto round = d.Poll();
  ASSERT_EQ(round.batches.size(), 1u);
  EXPECT_EQ(round.batches[0].items, 2);
}

TEST_F(DispatcherTest, TakeAllEmptiesQueues) {
  auto d = Make(8, 8, /*conserving=*/false);
  d->Enqueue(Request(1, 0, Milliseconds(500)));
  d->Enqueue(Request(2, 1, Milliseconds(500)));
  EXPECT_EQ(d->TakeAll().size(), 2u);
  EXPECT_EQ(d->queued(), 0u);
}

TEST_F(DispatcherTest, PassThroughSendsEveryRequestAloneAndExpiresNone) {
  Dispatcher::Options options;
  options.pass_through = true;
  options.max_inflight_batches = 1;
  Dispatcher d({{"a", 8}, {"b", 8}}, &estimator_, &clock_, options);
  d.Enqueue(Request(1, 0, Milliseconds(500), 4));
  d.Enqueue(Request(2, 0, Milliseconds(500), 2));
  // 10 ms alone: past saving for a batching gpulet, the backend's to drop.
  d.Enqueue(Request(3, 1, Milliseconds(1)));
  const Dispatcher::Decision decision = d.Poll();
  EXPECT_TRUE(decision.expired.empty());
  ASSERT_EQ(decision.batches.size(), 3u);
  EXPECT_EQ(decision.batches[0].items, 4);
  EXPECT_EQ(decision.batches[1].items, 2);
  EXPECT_EQ(decision.batches[2].requests.front().id, 3u);
  EXPECT_EQ(d.inflight(), 3);  // not capped by max_inflight_batches
  EXPECT_EQ(d.queued(), 0u);
}

// The slot of a plan's assignment, as the frontend's workers and the
// simulator both build it.
TEST(DispatcherModelSlotTest, ForTakesThePlansBatchAndCycleAndTheConfigsDelay) {
  ModelAssignment a;
  a.set_model("m");
  a.set_batch_size(0);
  a.set_duty_cycle_ms(2.5);
  const Dispatcher::ModelSlot bare = Dispatcher::ModelSlot::For(a, nullptr);
  EXPECT_EQ(bare.name, "m");
  EXPECT_EQ(bare.batch_cap, 1);  // at least one
  EXPECT_EQ(bare.duty_cycle, absl::Microseconds(2500));
  EXPECT_EQ(bare.max_queue_delay, absl::InfiniteDuration());
  ModelConfig config;
  a.set_batch_size(8);
  EXPECT_EQ(Dispatcher::ModelSlot::For(a, &config).max_queue_delay,
            absl::InfiniteDuration());  // no bound set
  config.set_max_queue_delay_ms(3);
  const Dispatcher::ModelSlot bounded = Dispatcher::ModelSlot::For(a, &config);
  EXPECT_EQ(bounded.batch_cap, 8);
  EXPECT_EQ(bounded.max_queue_delay, Milliseconds(3));
}

}  // namespace
}  // namespace tessera
