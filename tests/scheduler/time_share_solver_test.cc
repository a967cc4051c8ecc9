#include "scheduler/time_share_solver.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

class TimeShareSolverTest : public ::testing::Test {
 protected:
  TimeShareSolverTest()
      : a_(*LatencyModel::FromProfile(testing::LinearProfile("a", 2, 1))),
        b_(*LatencyModel::FromProfile(testing::LinearProfile("b", 4, 2))) {}
  // The papers' deterministic rules: no headroom, no queueing bound.
  ModelDemand Demand(const LatencyModel& m, double rate, double slo,
                     bool queueing = false) {
    ModelDemand d{m.model(), rate, slo, 32, &m};
    d.queueing_check = queueing;
    return d;
  }
  LatencyModel a_, b_;
};

TEST_F(TimeShareSolverTest, SaturatedBatchAndThroughputByHand) {
  // 2 (2 + b) <= 20 -> b = 8, L = 10 ms -> 800 req/s on the whole GPU.
  ModelDemand m = Demand(a_, 0, 20);
  EXPECT_EQ(SaturatedBatch(m, 100), 8);
  EXPECT_DOUBLE_EQ(SaturatedThroughput(m, 100), 800);
  // At 50 %: L doubles; 2 * 2 (2 + b) <= 20 -> b = 3, L = 10 -> 300 req/s.
  EXPECT_EQ(SaturatedBatch(m, 50), 3);
  EXPECT_DOUBLE_EQ(SaturatedThroughput(m, 50), 300);
}

TEST_F(TimeShareSolverTest, WholeGpuHeadroomAppliesOnlyToTheWholeGpu) {
  // Latency headroom 1.25, whole-GPU headroom 1.0. Whole GPU: 2 (2 + b) <=
  // 20 -> b = 8, L = 10 ms -> 800 req/s (1.25 everywhere: 2 x 1.25 (2 + b)
  // <= 20 -> b = 6, L = 10 ms -> 600). At 50 % the 1.25 stays: 2 x 1.25 x
  // 2 (2 + b) <= 20 -> b = 2, L = 1.25 x 8 = 10 ms -> 200 req/s.
  ModelDemand m = Demand(a_, 0, 20);
  m.latency_scale = 1.25;
  ModelDemand whole = m;
  whole.whole_gpu_latency_scale = 1.0;
  EXPECT_DOUBLE_EQ(SaturatedThroughput(m, 100), 600);
  EXPECT_DOUBLE_EQ(SaturatedThroughput(whole, 100), 800);
  EXPECT_DOUBLE_EQ(SaturatedThroughput(m, 50), 200);
  EXPECT_DOUBLE_EQ(SaturatedThroughput(whole, 50), 200);
  EXPECT_DOUBLE_EQ(PlannedLatency(whole, 3, 100), 5);
  EXPECT_DOUBLE_EQ(PlannedLatency(whole, 3, 50), 12.5);
}

TEST_F(TimeShareSolverTest, SoloFitsIsTheSolversAnswerMemoised) {
  // The saturated rates above bound what fits: 800 req/s on the whole GPU,
  // 300 at 50 %.
  ModelDemand m = Demand(a_, 0, 20);
  EXPECT_TRUE(SoloFits(m, 800, 100));
  EXPECT_FALSE(SoloFits(m, 900, 100));
  EXPECT_TRUE(SoloFits(m, 300, 50));
  EXPECT_FALSE(SoloFits(m, 350, 50));
  EXPECT_EQ(m.solo_fits_cache.size(), 4u);
  for (double rate : {50.0, 300.0, 350.0, 800.0, 900.0}) {
    for (double share : {50.0, 100.0}) {
      const bool solved =
          SolveTimeShare({Slice{&m, rate}}, share, SoloLatency).has_value();
      EXPECT_EQ(SoloFits(m, rate, share), solved) << rate << " @" << share;
    }
  }
  EXPECT_EQ(m.solo_fits_cache.size(), 10u);
}

// TimeShareFeasible stops at the first feasible duty cycle; it must say
// what SolveTimeShare says, with and without the queueing bound, for one
// and two slices over a spread of rates, SLOs and shares.
TEST_F(TimeShareSolverTest, FeasibleAgreesWithTheSolver) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> rate(1, 600), slo(8, 120);
  const std::vector<double> shares = {20, 40, 50, 60, 80, 100};
  int feasible = 0, infeasible = 0;
  for (int i = 0; i < 400; ++i) {
    const bool queueing = i % 2 == 0;
    ModelDemand x = Demand(a_, 0, slo(rng), queueing);
    ModelDemand y = Demand(b_, 0, slo(rng), queueing);
    std::vector<Slice> slices = {Slice{&x, rate(rng)}};
    if (i % 3 != 0) slices.push_back(Slice{&y, rate(rng) / 4});
    const double share = shares[i % shares.size()];
    const bool solved = SolveTimeShare(slices, share, SoloLatency).has_value();
    EXPECT_EQ(TimeShareFeasible(slices, share, SoloLatency), solved)
        << "case " << i;
    (solved ? feasible : infeasible)++;
  }
  // Both answers occur often enough for the comparison to mean something.
  EXPECT_GT(feasible, 50);
  EXPECT_GT(infeasible, 50);
}

TEST_F(TimeShareSolverTest, LoneResidueModelByHand) {
  // 100 req/s, SLO 20 ms, L(b) = 2 + b: b = 2 needs d in (10, 20] and
  // d + 4 <= 20 -> d = 16, occupancy 4 / 16; b = 1 gives at best 3 / 10.
  ModelDemand m = Demand(a_, 100, 20);
  auto s = SolveTimeShare({Slice{&m, 100}}, 100, SoloLatency);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->batches[0], 2);
  EXPECT_NEAR(s->duty_cycle_ms, 16, 1e-9);
  EXPECT_NEAR(s->occupancy, 0.25, 1e-9);
}

TEST_F(TimeShareSolverTest, TwoModelsShareWithinBothSlos) {
  ModelDemand x = Demand(a_, 100, 40);
  ModelDemand y = Demand(b_, 50, 60);
  auto s = SolveTimeShare({Slice{&x, 100}, Slice{&y, 50}}, 100, SoloLatency);
  ASSERT_TRUE(s.has_value());
  const double sum = s->exec_ms[0] + s->exec_ms[1];
  EXPECT_LE(sum, s->duty_cycle_ms + 1e-9);       // round fits
  EXPECT_LE(s->duty_cycle_ms + sum, 40 + 1e-9);  // tightest SLO
  EXPECT_GE(1000.0 * s->batches[0] / s->duty_cycle_ms, 100 - 1e-9);
  EXPECT_GE(1000.0 * s->batches[1] / s->duty_cycle_ms, 50 - 1e-9);
}

TEST_F(TimeShareSolverTest, InfeasibleWhenSloBelowTwoExecutions) {
  ModelDemand m = Demand(a_, 10, 5);  // L(1) = 3: 2 * 3 > 5
  EXPECT_FALSE(SolveTimeShare({Slice{&m, 10}}, 100, SoloLatency).has_value());
}

TEST_F(TimeShareSolverTest, QueueingBoundByHand) {
  // Alone, L(b) = 2 + b ms, SLO 12 ms, 300 req/s. The deterministic rules
  // accept b = 1 (d in [3, 3.33], d + 3 <= 12). Its busy fraction is
  // rho = 300 * 3 / 1000 = 0.9: the planning wait (p99.5) is
  // W = ln(200) * 0.9 * 3 / 0.2 = 71.5 ms, far over the SLO. b = 2 (d in
  // (3.33, 6.67], L = 4, rho = 0.6, W = 5.30 * 0.6 * 4 / 0.8 = 15.9 ->
  // 19.9 > 12) also fails; b = 3 (d in (6.67, 10], L = 5, rho = 0.5,
  // W = 5.30 * 0.5 * 5 / 1 = 13.2 -> 18.2 > 12) fails; b = 4 would need
  // d > 10 and d + 6 <= 12: none. So
  // the queueing bound makes 300 req/s infeasible where the papers' rules
  // accept it.
  ModelDemand det = Demand(a_, 300, 12);
  EXPECT_TRUE(SolveTimeShare({Slice{&det, 300}}, 100, SoloLatency));
  ModelDemand queued = Demand(a_, 300, 12, /*queueing=*/true);
  EXPECT_FALSE(SolveTimeShare({Slice{&queued, 300}}, 100, SoloLatency));
  // At 100 req/s: b = 1, rho = 0.3, W = 5.30 * 0.3 * 3 / 1.4 = 3.41 ->
  // 6.41 <= 12, and d + L <= 12 with d = 9: feasible.
  ModelDemand light = Demand(a_, 100, 12, /*queueing=*/true);
  auto s = SolveTimeShare({Slice{&light, 100}}, 100, SoloLatency);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->batches[0], 1);
}

TEST_F(TimeShareSolverTest, BurstBoundByHand) {
  // The case above (alone, L(b) = 2 + b ms, SLO 12 ms, 300 req/s), which
  // the queueing bound refuses. With the burst bound at tail 0.001:
  // d = 10/3 ms (b = 1, one request per cycle on average) has at most
  // q = 5 arrivals per cycle at the tail (PoissonQuantile(1, 0.001)), and
  // d + L(5) = 3.33 + 7 = 10.33 <= 12: feasible at occupancy 3 / 3.33 =
  // 0.9. (d = 4 at b = 2 also fits, exactly: q = 6 at mean 1.2, 4 + 8 =
  // 12, but at occupancy 1.) The cap takes the burst: d + L(cap) <= 12
  // gives 6.
  ModelDemand m = Demand(a_, 300, 12, /*queueing=*/true);
  m.burst_tail = 0.001;
  auto s = SolveTimeShare({Slice{&m, 300}}, 100, SoloLatency);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->batches[0], 1);
  EXPECT_NEAR(s->duty_cycle_ms, 10.0 / 3, 1e-9);
  EXPECT_NEAR(s->occupancy, 0.9, 1e-9);
  EXPECT_EQ(PoissonQuantile(1, 0.001), 5);
  EXPECT_EQ(s->caps[0], 6);
  // 400 req/s: no d has both a round that fits (2 + ceil(0.4 d) <= d)
  // and a tail batch within the SLO (d + 2 + q <= 12).
  ModelDemand heavy = Demand(a_, 400, 12, /*queueing=*/true);
  heavy.burst_tail = 0.001;
  EXPECT_FALSE(SolveTimeShare({Slice{&heavy, 400}}, 100, SoloLatency));
  // Without burst caps the bound is off (the cap would not take q).
  m.burst_caps = false;
  EXPECT_FALSE(SolveTimeShare({Slice{&m, 300}}, 100, SoloLatency));
}

TEST_F(TimeShareSolverTest, BurstBoundNeedsBatchingToDrainTheBurst) {
  // L(b) = b ms: a larger batch saves nothing per request, so every extra
  // request of a burst adds 1 ms to the round. At 900 req/s that is a
  // marginal load of 0.9: a burst takes 0.9 of its own arrival time to
  // serve and queues round after round. SLO 20 ms. The queueing bound
  // refuses it: rho = 0.9 at every d, W = ln(200) 0.9 b / (2 0.1) =
  // 23.8 b, and b + W > 20. The burst bound alone accepts it (b = 1 at
  // d = 1.11 ms: 1 request per cycle on average, 5 at the 0.001 tail,
  // d + L(5) = 6.1 <= 20); with the marginal load capped at 0.8 it
  // refuses too.
  const LatencyModel linear =
      *LatencyModel::FromProfile(testing::LinearProfile("z", 0, 1));
  ModelDemand m = Demand(linear, 900, 20, /*queueing=*/true);
  EXPECT_FALSE(SolveTimeShare({Slice{&m, 900}}, 100, SoloLatency));
  m.burst_tail = 0.001;
  m.burst_max_marginal_load = 1;
  EXPECT_TRUE(SolveTimeShare({Slice{&m, 900}}, 100, SoloLatency));
  m.burst_max_marginal_load = 0.8;
  EXPECT_FALSE(SolveTimeShare({Slice{&m, 900}}, 100, SoloLatency));
  // 700 req/s, SLO 7 ms: the queueing bound refuses (b + 6.18 b > 7); the
  // burst bound at marginal load 0.7 <= 0.8 accepts (d = 1.43: at most 5
  // per cycle at the tail, 1.43 + 5 <= 7).
  ModelDemand light = Demand(linear, 700, 7, /*queueing=*/true);
  EXPECT_FALSE(SolveTimeShare({Slice{&light, 700}}, 100, SoloLatency));
  light.burst_tail = 0.001;
  light.burst_max_marginal_load = 0.8;
  EXPECT_TRUE(SolveTimeShare({Slice{&light, 700}}, 100, SoloLatency));
}

TEST_F(TimeShareSolverTest, BurstCapsByHand) {
  // Alone (L = 2 + b, SLO 20, 100 req/s): nominal b = 2 at d = 16; the
  // round leaves no room above it (16 + L(3) > 20), but alone the cap is
  // the saturated batch: 2 (2 + b) <= 20 -> 8.
  ModelDemand m = Demand(a_, 100, 20);
  auto alone = SolveTimeShare({Slice{&m, 100}}, 100, SoloLatency);
  ASSERT_TRUE(alone.has_value());
  EXPECT_EQ(alone->batches[0], 2);
  EXPECT_EQ(alone->caps[0], 8);
  // Without burst caps (the papers' dispatcher) the cap is the nominal
  // batch.
  ModelDemand nominal = m;
  nominal.burst_caps = false;
  auto fixed = SolveTimeShare({Slice{&nominal, 100}}, 100, SoloLatency);
  ASSERT_TRUE(fixed.has_value());
  EXPECT_EQ(fixed->batches[0], 2);
  EXPECT_EQ(fixed->caps[0], 2);
  // Shared: each cap keeps d + (round with that slice at its cap) within
  // the tightest SLO, and is never below the nominal batch.
  ModelDemand x = Demand(a_, 100, 40);
  ModelDemand y = Demand(b_, 50, 60);
  auto shared =
      SolveTimeShare({Slice{&x, 100}, Slice{&y, 50}}, 100, SoloLatency);
  ASSERT_TRUE(shared.has_value());
  const double round = shared->exec_ms[0] + shared->exec_ms[1];
  for (int j = 0; j < 2; ++j) {
    EXPECT_GE(shared->caps[j], shared->batches[j]);
    const Slice s = shared->slices[j];
    const double with_cap =
        round - shared->exec_ms[j] + SoloLatency(s, shared->caps[j], 100);
    EXPECT_LE(shared->duty_cycle_ms + with_cap, 40 + 1e-9) << j;
    const double one_more =
        round - shared->exec_ms[j] + SoloLatency(s, shared->caps[j] + 1, 100);
    EXPECT_GT(shared->duty_cycle_ms + one_more, 40) << j;
  }
}

TEST_F(TimeShareSolverTest, InterferenceFactorInflatesLatency) {
  ModelDemand m = Demand(a_, 100, 20);
  auto slowed = [](const Slice& s, int b, double p) {
    return 1.5 * SoloLatency(s, b, p);
  };
  auto s = SolveTimeShare({Slice{&m, 100}}, 100, slowed);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(s->exec_ms[0], 1.5 * (2 + s->batches[0]), 1e-9);
}

TEST_F(TimeShareSolverTest, LoneBatchOneModelThatCannotBatchABurstQueuesAsMD1) {
  // Alone, L(b) = 2 + b ms, SLO 7.5 ms, 100 req/s, queueing on: b = 1,
  // d in [3, 4.5]. Batch 2 (4 ms) fits the cap only while d + 4 <= 7.5,
  // i.e. d <= 3.5. At d = 4.5 (the lowest occupancy) the cap is 1 and
  // requests queue one by one: the exact M/D/1 p99.5 wait at rho = 0.3
  // is 2.249 x 3 = 6.75 ms, 3 + 6.75 > 7.5. At d = 3.5 a burst joins the
  // next batch (RoundWaitMs: ln(200) 0.3 3 / 1.4 = 3.41 ms, 6.41 <= 7.5):
  // feasible, with a cap of at least 2.
  ModelDemand m = Demand(a_, 100, 7.5, /*queueing=*/true);
  auto s = SolveTimeShare({Slice{&m, 100}}, 100, SoloLatency);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->batches[0], 1);
  EXPECT_LE(s->duty_cycle_ms, 3.5 + 1e-9);
  EXPECT_GE(s->caps[0], 2);
  EXPECT_NEAR(MD1WaitMs(0.3, 3), 6.75, 0.01);
  // With batch 1 as the model's largest, nothing can merge: infeasible.
  m.max_batch = 1;
  EXPECT_FALSE(SolveTimeShare({Slice{&m, 100}}, 100, SoloLatency));
  // The papers' rules accept it (d = 4.5: 4.5 + 3 <= 7.5).
  ModelDemand det = Demand(a_, 100, 7.5);
  det.max_batch = 1;
  EXPECT_TRUE(SolveTimeShare({Slice{&det, 100}}, 100, SoloLatency));
}

TEST_F(TimeShareSolverTest, LoneGpuletDealtEveryKthRequestIsItsBatchQueue) {
  // Alone, L(b) = 2 + b ms, SLO 20 ms, the queueing bound on (no burst
  // bound). A gpulet dealt every third of the model's requests sustains
  // more than one on its own Poisson stream: its batch queue with Erlang-3
  // gaps (BatchQueueLateFraction) keeps the late share within the tail.
  ModelDemand m = Demand(a_, 0, 20, /*queueing=*/true);
  m.round_robin_arrivals = true;
  m.lone_batch_queue = true;
  const double poisson = SaturatedThroughput(m, 100);
  const double third = SaturatedThroughput(m, 100, 3);
  EXPECT_GT(third, 1.1 * poisson);
  const double r = (poisson + third) / 2;
  auto s = SolveTimeShare({Slice{&m, r, 3}}, 100, SoloLatency);
  ASSERT_TRUE(s.has_value());
  // Back to back: the smallest batch that keeps up, nothing else joins.
  const int b = s->batches[0];
  EXPECT_GT(1000.0 * b / (2 + b), r);
  EXPECT_LE(1000.0 * (b - 1) / (1 + b), r);
  EXPECT_DOUBLE_EQ(s->occupancy, 1);
  // The dispatcher's cap: d + L(c) <= 20 with d = L(b), at most 8 (the
  // batch queue is checked up to that cap).
  EXPECT_EQ(s->caps[0], std::min(16 - b, 8));
  std::vector<double> batch_ms;
  for (int c = 1; c <= s->caps[0]; ++c) batch_ms.push_back(2.0 + c);
  EXPECT_LE(BatchQueueLateFraction(r, batch_ms, 20, 3), m.queueing_tail);
  EXPECT_GT(BatchQueueLateFraction(r, batch_ms, 20), m.queueing_tail);
  // On its own Poisson stream it does not fit, nor without the rule.
  EXPECT_FALSE(SolveTimeShare({Slice{&m, r}}, 100, SoloLatency));
  m.lone_batch_queue = false;
  EXPECT_FALSE(SolveTimeShare({Slice{&m, r, 3}}, 100, SoloLatency));
}

TEST_F(TimeShareSolverTest, LoneGpuletFromCapTwoIsTheDispatchersQueue) {
  // A model alone on a whole GPU, L(b) = 0.5 + 2b ms (batching barely
  // pays, as vgg19's), SLO 15 ms, dealt every k-th request. Where no
  // round is feasible the gpulet is its batch queue; with
  // SharedRules.lone_queue_dispatcher that queue is checked as the
  // dispatcher runs it (ExpiringBatchQueueLateFraction, predicted at the
  // planned latency on a whole GPU) instead of the plain one, which
  // serves every late request and overstates the late share here.
  const LatencyModel steep =
      *LatencyModel::FromProfile(testing::LinearProfile("c", 0.5, 2));
  ModelDemand m = Demand(steep, 0, 15, /*queueing=*/true);
  m.round_robin_arrivals = true;
  m.lone_batch_queue = true;
  m.lone_queue_expiry = true;
  ModelDemand d = m;
  d.lone_queue_dispatcher = true;
  int only_dispatched = 0;
  for (int k : {1, 2, 3}) {
    for (double r = 100; r <= 1200; r += 20) {
      const auto plain = SolveTimeShare({Slice{&m, r, k}}, 100, SoloLatency);
      const auto with = SolveTimeShare({Slice{&d, r, k}}, 100, SoloLatency);
      if (!with.has_value()) continue;
      if (!plain.has_value()) ++only_dispatched;
      if (with->occupancy < 1 || with->caps[0] < 2) continue;  // a round
      // The lone batch queue at the schedule's cap is within the tail.
      std::vector<double> batch_ms;
      for (int c = 1; c <= with->caps[0]; ++c) batch_ms.push_back(0.5 + 2 * c);
      EXPECT_LE(ExpiringBatchQueueLateFraction(r, batch_ms, 15, k, 1.0),
                d.queueing_tail)
          << "k " << k << " rate " << r;
    }
  }
  EXPECT_GT(only_dispatched, 0);
  // A split gpulet keeps the plain queue (the chain costs too much for the
  // solver's many split candidates).
  for (int k : {1, 2, 3}) {
    for (double r = 50; r <= 600; r += 10) {
      EXPECT_EQ(SolveTimeShare({Slice{&m, r, k}}, 50, SoloLatency).has_value(),
                SolveTimeShare({Slice{&d, r, k}}, 50, SoloLatency).has_value())
          << "k " << k << " rate " << r;
    }
  }
}

TEST_F(TimeShareSolverTest, RotationSpacingCountsTheEqualGpuletsARateFills) {
  ModelDemand m = Demand(a_, 0, 20, /*queueing=*/true);
  m.round_robin_arrivals = true;
  m.lone_batch_queue = true;
  // The spacing k is the largest with k gpulets of SaturatedThroughput(m,
  // 100, k) within the rate.
  for (double rate : {500.0, 1500.0, 2500.0, 4000.0, 9000.0}) {
    double per = 0;
    const int k = RotationSpacing(m, rate, 100, &per);
    EXPECT_DOUBLE_EQ(per, SaturatedThroughput(m, 100, k)) << rate;
    if (k >= 2) EXPECT_GE(std::floor(rate / per), k) << rate;
    if (k < kBatchQueueMaxSpacing) {
      EXPECT_LT(std::floor(rate / SaturatedThroughput(m, 100, k + 1)), k + 1)
          << rate;
    }
  }
  double per = 0;
  EXPECT_EQ(RotationSpacing(m, 500, 100, &per), 1);
  EXPECT_GE(RotationSpacing(m, 9000, 100, &per), 3);
  // Off without the rules.
  m.round_robin_arrivals = false;
  EXPECT_EQ(RotationSpacing(m, 9000, 100, &per), 1);
  EXPECT_DOUBLE_EQ(per, SaturatedThroughput(m, 100));
}

TEST_F(TimeShareSolverTest, LoneBatchOneGpuletIsCheckedAsTheDispatcherRunsIt) {
  // L(1) = 3 ms, batch 1 only (cap 1), SLO 20 ms, alone at 220 req/s
  // (rho 0.66) on its own Poisson stream. Served however late, 0.93 % of
  // its requests would be late: refused. The dispatcher turns away those
  // that cannot make it, and then 0.34 % are (lone_queue_expiry).
  auto demand = [&](bool expiry) {
    ModelDemand m = Demand(a_, 0, 20, /*queueing=*/true);
    m.max_batch = 1;
    m.round_robin_arrivals = true;
    m.lone_batch_queue = true;
    m.lone_queue_expiry = expiry;
    return m;
  };
  const ModelDemand plain = demand(false);
  const ModelDemand expiring = demand(true);
  EXPECT_GT(BatchQueueLateFraction(220, {3.0}, 20), plain.queueing_tail);
  EXPECT_LT(DispatchedQueueLateFraction(220, {3.0}, 20),
            expiring.queueing_tail);
  EXPECT_FALSE(SolveTimeShare({Slice{&plain, 220}}, 100, SoloLatency));
  auto s = SolveTimeShare({Slice{&expiring, 220}}, 100, SoloLatency);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->batches[0], 1);
  EXPECT_EQ(s->caps[0], 1);
  EXPECT_DOUBLE_EQ(s->occupancy, 1);
  // Not at 240 req/s (0.72 % turned away).
  EXPECT_FALSE(SolveTimeShare({Slice{&expiring, 240}}, 100, SoloLatency));
}

}  // namespace
}  // namespace tessera
