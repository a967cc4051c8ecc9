// iGniter's Algorithms 1 and 2 on hand-built workloads, and the paper's
// Table 1 example on the coefficients fitted from the public V100 inputs
// (read from ../shared/data at run time; skipped where absent).
#include "scheduler/igniter_provisioner.h"

#include <filesystem>
#include <vector>

#include "datasets/igniter_coefficients.h"
#include "gtest/gtest.h"
#include "scheduler/queue_wait.h"

namespace tessera {
namespace {

// k = {0, 1000, 0, 0, 0}: k_act(b, r) = 1000 b / r ms, 10 ms per item on
// a whole GPU.
IgniterWorkload Linear(const std::string& name, double alpha_cache = 0) {
  IgniterWorkload w;
  w.model = name;
  w.k = {0, 1000, 0, 0, 0};
  w.beta_l2 = 10;  // 10 % L2 whatever the load
  w.alpha_cache = alpha_cache;
  return w;
}

IgniterHardware Plain() {
  IgniterHardware hw;
  hw.share_unit_percent = 10;
  return hw;
}

TEST(IgniterProvisionerTest, LowerBoundSharesPackOntoOneGpu) {
  const IgniterWorkload a = Linear("a"), b = Linear("b");
  const IgniterModel model(Plain());
  // SLO 100 ms, 40 req/s: b = 100 * 0.04 / 2 = 2; k_act(2, r) = 2000 / r
  // <= 50 -> r >= 40. Two such workloads fill 80 % of one GPU.
  auto p = ProvisionIgniter(model, {{&a, 100, 40, 32}, {&b, 100, 40, 32}}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->gpus.size(), 1u);
  ASSERT_EQ(p->gpus[0].size(), 2u);
  for (const auto& r : p->gpus[0]) {
    EXPECT_EQ(r.batch, 2);
    EXPECT_DOUBLE_EQ(r.share_percent, 40);
    EXPECT_DOUBLE_EQ(r.predicted_ms, 50);
    EXPECT_DOUBLE_EQ(r.standby_share_percent, 50);
  }
  // A third does not fit beside them: a second GPU opens.
  const IgniterWorkload c = Linear("c");
  p = ProvisionIgniter(
      model, {{&a, 100, 40, 32}, {&b, 100, 40, 32}, {&c, 100, 40, 32}}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpus.size(), 2u);
  // At most one partition per GPU: three GPUs.
  p = ProvisionIgniter(
      model, {{&a, 100, 40, 32}, {&b, 100, 40, 32}, {&c, 100, 40, 32}}, 4,
      /*max_partitions_per_gpu=*/1);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpus.size(), 3u);
  // ... unless only one GPU is allowed.
  p = ProvisionIgniter(
      model, {{&a, 100, 40, 32}, {&b, 100, 40, 32}, {&c, 100, 40, 32}}, 1);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(IgniterProvisionerTest, MeasuredSoloLatencyFloorsThePrediction) {
  // The model says k_act(2, 40) = 50 ms, but the profile measured 1.2x
  // that (1200 b / r): ALLOC grows the share until 2400 / r <= 50, r = 50
  // (the 10 % grid), where the floor (48 ms) is above the model (40 ms).
  const IgniterWorkload a = Linear("a");
  const IgniterModel model(Plain());
  IgniterRequest q{&a, 100, 40, 32};
  q.solo_floor_ms = [](int batch, double share) {
    return 1200.0 * batch / share;
  };
  auto p = ProvisionIgniter(model, {q}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->gpus.size(), 1u);
  EXPECT_EQ(p->gpus[0][0].batch, 2);
  EXPECT_DOUBLE_EQ(p->gpus[0][0].share_percent, 50);
  EXPECT_DOUBLE_EQ(p->gpus[0][0].predicted_ms, 48);
}

TEST(IgniterProvisionerTest, InterferenceRaisesEveryResidentsShare) {
  // alpha_cache 0.02 per % of co-runner L2 (10 %): co-located, each runs
  // 1.2x slower; at r = 40 it takes 60 ms > 50, so ALLOC grows both to 50
  // (48 ms). The newcomer's placement raised the first workload's share.
  const IgniterWorkload a = Linear("a", 0.02), b = Linear("b", 0.02);
  const IgniterModel model(Plain());
  auto p = ProvisionIgniter(model, {{&a, 100, 40, 32}, {&b, 100, 40, 32}}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->gpus.size(), 1u);
  for (const auto& r : p->gpus[0]) {
    EXPECT_DOUBLE_EQ(r.share_percent, 50);
    EXPECT_NEAR(r.predicted_ms, 48, 1e-9);
  }
}

TEST(IgniterProvisionerTest, BurstBoundLetsAFullBatchTakeItsBurst) {
  // k_act(b, r) = 100 b / r ms; 320 req/s at SLO 200: b = 32, t = 3200 / r
  // (<= 100 from r = 40), rho = 320 t / 32000 = t / 100. The queueing
  // check (t + W <= 200, W = ln(200) rho t / (2 (1 - rho))) first holds at
  // r = 70: t = 45.7, W = 101.9 (at 60: t = 53.3, W = 161.3, 214.7 > 200).
  // With the burst bound at tail 0.001, a batch's time at r = 60 brings
  // 17.1 requests on average and at most 31 <= 32 at the tail
  // (PoissonQuantile), so the wait is one batch: 53.3 + 53.3 <= 200.
  IgniterWorkload w = Linear("a");
  w.k = {0, 100, 0, 0, 0};
  const IgniterModel model(Plain());
  IgniterRequest q{&w, 200, 320, 32};
  q.queueing_check = true;
  auto p = ProvisionIgniter(model, {q}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpus[0][0].batch, 32);
  EXPECT_DOUBLE_EQ(p->gpus[0][0].share_percent, 70);
  q.burst_tail = 0.001;
  p = ProvisionIgniter(model, {q}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->gpus[0][0].share_percent, 60);
}

TEST(IgniterProvisionerTest, BulkQueueWaitPlansTheLowerBoundShare) {
  // The workload of BurstBoundLetsAFullBatchTakeItsBurst. Its lower bound
  // is r = 40 (t = 80 <= SLO / 2): rho = 0.8 at batch 32, where the bulk
  // queue's p99.5 sojourn is 2.175 t = 174 <= 200 (queue_wait.h), so
  // ALLOC stops there, below the burst bound's 60.
  IgniterWorkload w = Linear("a");
  w.k = {0, 100, 0, 0, 0};
  const IgniterModel model(Plain());
  IgniterRequest q{&w, 200, 320, 32};
  q.queueing_check = true;
  q.burst_tail = 0.001;
  q.bulk_queue_wait = true;
  EXPECT_NEAR(80 * (1 + BulkQueueWaitMs(0.8, 1, 32)), 174, 0.5);
  auto p = ProvisionIgniter(model, {q}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpus[0][0].batch, 32);
  EXPECT_DOUBLE_EQ(p->gpus[0][0].share_percent, 40);
}

TEST(IgniterProvisionerTest, TooMuchForOneGpuIsReplicated) {
  const IgniterWorkload a = Linear("a");
  const IgniterModel model(Plain());
  // 150 req/s at SLO 100: b = 8, k_act(8, r) = 8000 / r <= 50 needs
  // r = 160 %. Whole-GPU replicas: the largest b with 10 b <= 50 is 5,
  // 100 req/s predicted, 90 % = 90 each; the residue, 60 req/s: b = 3,
  // r = 3000 / 50 = 60 %.
  auto p = ProvisionIgniter(model, {{&a, 100, 150, 32}}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->gpus.size(), 2u);
  EXPECT_EQ(p->gpus[0][0].batch, 5);
  EXPECT_DOUBLE_EQ(p->gpus[0][0].share_percent, 100);
  EXPECT_NEAR(p->gpus[0][0].rate_rps, 90, 1e-9);
  EXPECT_EQ(p->gpus[1][0].batch, 3);
  EXPECT_DOUBLE_EQ(p->gpus[1][0].share_percent, 60);
  EXPECT_NEAR(p->gpus[1][0].rate_rps, 60, 1e-9);
  // Without replicas (the paper: one GPU per workload) it is refused.
  IgniterRequest one{&a, 100, 150, 32};
  one.replicas = false;
  p = ProvisionIgniter(model, {one}, 4);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(p.status().message().find("one GPU"), std::string::npos);
  // An SLO no whole GPU can meet at batch 1 (10 ms > 18 / 2).
  p = ProvisionIgniter(model, {{&a, 18, 10, 32}}, 4);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(p.status().message().find("'a'"), std::string::npos);
}

TEST(IgniterProvisionerTest, FirstFitLowerKeepsLowerSharesAndIgnoresCoRunners) {
  // SLO 100 ms, 20 req/s: b = 1, r_lower = 1000 / 50 = 20 %. Each slows
  // its co-runners by alpha_cache x their L2 (10 %) = 1 % per co-runner
  // percent: beside four others, k_act x 1.4.
  std::vector<IgniterWorkload> w;
  for (int i = 0; i < 5; ++i)
    w.push_back(Linear("w" + std::to_string(i), 0.01));
  std::vector<IgniterRequest> requests;
  for (const auto& x : w) requests.push_back({&x, 100, 20, 32});
  const IgniterModel model(Plain());
  // FFD+: five r_lower shares fill one GPU, each predicted at
  // 50 x 1.4 = 70 ms, past half the SLO.
  auto ffd =
      ProvisionIgniter(model, requests, 4, 0, IgniterPacking::kFirstFitLower);
  ASSERT_TRUE(ffd.ok()) << ffd.status();
  ASSERT_EQ(ffd->gpus.size(), 1u);
  ASSERT_EQ(ffd->gpus[0].size(), 5u);
  for (const auto& r : ffd->gpus[0]) {
    EXPECT_DOUBLE_EQ(r.share_percent, 20);
    EXPECT_NEAR(r.predicted_ms, 70, 1e-9);
  }
  // ALLOC grows every resident instead: beside two others (x 1.2) a
  // share of 30 % predicts 40 ms; a fourth would need 1000 x 1.3 / 50 =
  // 26 -> 30 % each, 120 % in all. Three per GPU: two GPUs.
  auto alloc = ProvisionIgniter(model, requests, 4);
  ASSERT_TRUE(alloc.ok()) << alloc.status();
  ASSERT_EQ(alloc->gpus.size(), 2u);
  EXPECT_EQ(alloc->gpus[0].size(), 3u);
  for (const auto& r : alloc->gpus[0]) {
    EXPECT_DOUBLE_EQ(r.share_percent, 30);
    EXPECT_LE(r.predicted_ms, 50);
  }
}

TEST(IgniterProvisionerRealDataTest, ReproducesThePapersTableOne) {
  const char kPath[] =
      TESSERA_SHARED_DIR "/data/igniter-v100/coefficients.jsonl";
  if (!std::filesystem::exists(kPath)) GTEST_SKIP() << kPath << " absent";
  auto c = LoadIgniterCoefficients(kPath);
  ASSERT_TRUE(c.ok()) << c.status();
  const IgniterModel model(c->hardware);
  const auto& w = c->workloads;
  // Table 1: AlexNet 15 ms / 500 req/s, ResNet-50 40 / 400, VGG-19
  // 60 / 200 -> batches 4, 8, 6 and shares 10, 30, 37.5 % on one GPU.
  auto p = ProvisionIgniter(model,
                            {{&w.at("alexnet"), 15, 500, 32},
                             {&w.at("resnet50"), 40, 400, 32},
                             {&w.at("vgg19"), 60, 200, 32}},
                            4);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->gpus.size(), 1u);
  std::map<int, IgniterPlacement> by_request;
  for (const auto& r : p->gpus[0]) by_request[r.request] = r;
  EXPECT_EQ(by_request[0].batch, 4);
  EXPECT_EQ(by_request[1].batch, 8);
  EXPECT_EQ(by_request[2].batch, 6);
  EXPECT_DOUBLE_EQ(by_request[0].share_percent, 10);
  EXPECT_DOUBLE_EQ(by_request[1].share_percent, 30);
  EXPECT_DOUBLE_EQ(by_request[2].share_percent, 37.5);
  for (const auto& [i, r] : by_request) {
    std::cout << "[ info ] request " << i << ": t_inf " << r.predicted_ms
              << " ms\n";
  }
}

TEST(IgniterProvisionerTest, BatchQueueAdmitsSmallerSharesThanWholeBatches) {
  // SLO 100 ms, 40 req/s: b = 2, and a batch of k at share r takes
  // 1000 k / r ms. The wait of whole batches (bulk queue, every batch at
  // L(2)) needs r = 80 % (p99.5 sojourn 92.6 ms; 118.6 at 70 %); the batch
  // queue, whose lone requests take half as long, admits r = 70 % (late
  // fraction 0.27 %; 2.6 % at 60 %).
  const IgniterWorkload a = Linear("a");
  const IgniterModel model(Plain());
  IgniterRequest q{&a, 100, 40, 32, /*queueing_check=*/true};
  q.bulk_queue_wait = true;
  auto wait_fits = [](double r) {
    const double t = 2000 / r;
    return t + FixedBatchWaitMs(40 * t / 2000, t, 2, kQueueingTail, 0,
                                /*bulk_queue=*/true) <=
           100;
  };
  auto late = [](double r) {
    return BatchQueueLateFraction(40, {1000 / r, 2000 / r}, 100);
  };
  EXPECT_FALSE(wait_fits(70));
  EXPECT_TRUE(wait_fits(80));
  EXPECT_GT(late(60), kQueueingTail);
  EXPECT_LE(late(70), kQueueingTail);
  auto p = ProvisionIgniter(model, {q}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpus[0][0].batch, 2);
  EXPECT_DOUBLE_EQ(p->gpus[0][0].share_percent, 80);
  q.lone_batch_queue = true;
  p = ProvisionIgniter(model, {q}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->gpus[0][0].batch, 2);
  EXPECT_DOUBLE_EQ(p->gpus[0][0].share_percent, 70);
}

TEST(IgniterProvisionerTest, BatchQueueSizesReplicasAtTheirOwnBatches) {
  // 150 req/s at SLO 100 with the queueing check: whole-GPU replicas at
  // b = 5 (10 b ms). Charged as whole 50 ms batches (bulk queue) a replica
  // carries about 20 req/s (p99.5 sojourn 99.8 ms at 20, 102.7 at 30); in
  // its batch queue, where a lone request takes 10 ms, the largest rate
  // whose late fraction stays within 0.5 % (0.14 % at 60, 0.89 % at 70).
  const IgniterWorkload a = Linear("a");
  const IgniterModel model(Plain());
  IgniterRequest q{&a, 100, 150, 32, /*queueing_check=*/true};
  q.bulk_queue_wait = true;
  const std::vector<double> batch_ms = {10, 20, 30, 40, 50};
  auto replica = [&]() -> IgniterPlacement {
    auto p = ProvisionIgniter(model, {q}, 16);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->gpus[0][0] : IgniterPlacement{};
  };
  const IgniterPlacement bulk = replica();
  EXPECT_EQ(bulk.batch, 5);
  EXPECT_GT(bulk.rate_rps, 19);
  EXPECT_LT(bulk.rate_rps, 30);
  q.lone_batch_queue = true;
  const IgniterPlacement queue = replica();
  EXPECT_EQ(queue.batch, 5);
  EXPECT_LE(BatchQueueLateFraction(queue.rate_rps, batch_ms, 100),
            kQueueingTail);
  EXPECT_GT(BatchQueueLateFraction(1.01 * queue.rate_rps, batch_ms, 100),
            kQueueingTail);
  EXPECT_GT(queue.rate_rps, 60);
  EXPECT_LT(queue.rate_rps, 70);
}

TEST(IgniterProvisionerTest, ReplicaRatesSplitAsTheAuthorsCodeDoes) {
  // Whole replicas while more than one is left, then the rest.
  EXPECT_EQ(ReplicaRates(250, 100), (std::vector<double>{100, 100, 50}));
  EXPECT_EQ(ReplicaRates(80, 100), (std::vector<double>{80}));
  // 100 - 2 (100 / 3) is not 100 / 3 in floating point; the rest is set
  // equal, so the router sees three equal weights.
  const double third = 100.0 / 3;
  EXPECT_NE(100 - third - third, third);
  EXPECT_EQ(ReplicaRates(100, third),
            (std::vector<double>{third, third, third}));
}

TEST(IgniterProvisionerTest, RotationSizesBatchOneReplicasAsErlangQueues) {
  // Batch 1 at 1 ms, SLO 2.5 ms: a replica may wait 1.5 ms. Dealt every
  // n-th request in rotation it is planned with RoundWaitMs, whose heavy
  // form ln(200) rho / (2 (1 - rho)) ms reaches 1.5 at rho = 0.3615 (the
  // light form stays below 1 ms).
  IgniterRequest q;
  q.slo_ms = 2.5;
  q.queueing_check = true;
  q.round_robin_arrivals = true;
  // 700 req/s: two replicas at 350 (rho 0.35, wait 1.43 ms) fit.
  q.rate_rps = 700;
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 1, 1.0, 1000), 350);
  // 800 req/s: two at 400 (rho 0.4, 1.77 ms) do not fit; three at 266.7
  // in strict rotation (k = 3, rho 0.27) do.
  q.rate_rps = 800;
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 1, 1.0, 1000), 800.0 / 3);
  // 600 req/s: two at 300 (rho 0.3) fit, unless a replica may carry no
  // more than 250 (the 0.9 cap): then three at 200.
  q.rate_rps = 600;
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 1, 1.0, 1000), 300);
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 1, 1.0, 250), 200);
  // Only splits above what the M/D/1 sizing already carries.
  EXPECT_EQ(RotationReplicaRps(q, 1, 1.0, 1000, /*min_rps=*/300), 0);
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 1, 1.0, 1000, /*min_rps=*/299), 300);
  q.rate_rps = 800;
  // An M/D/1 queue at rho 0.35 waits longer than 1.5 ms at the tail: the
  // rotation is what admits those replicas.
  EXPECT_GT(FixedBatchWaitMs(0.35, 1.0, 1), 1.5);
  // Not from batch 2 without the batch queue, and not with the rule or the
  // queueing check off.
  EXPECT_EQ(RotationReplicaRps(q, 2, 1.0, 1000), 0);
  q.round_robin_arrivals = false;
  EXPECT_EQ(RotationReplicaRps(q, 1, 1.0, 1000), 0);
  q.round_robin_arrivals = true;
  q.queueing_check = false;
  EXPECT_EQ(RotationReplicaRps(q, 1, 1.0, 1000), 0);
}

TEST(IgniterProvisionerTest,
     RotationSizesBatchOneReplicasAsTheDispatcherRunsThem) {
  // Batch 1 at 1 ms, SLO 2.5 ms, as above. With the dispatcher's expiry
  // (lone_queue_expiry) a replica is its batch queue at cap 1, whose late
  // requests are turned away: two replicas at 400 req/s, each dealt every
  // other request, are 0.34 % late, where the wait bound refuses them.
  IgniterRequest q;
  q.slo_ms = 2.5;
  q.queueing_check = true;
  q.round_robin_arrivals = true;
  q.lone_batch_queue = true;
  q.lone_queue_expiry = true;
  q.rate_rps = 800;
  const std::vector<double> one = {1.0};
  EXPECT_LT(DispatchedQueueLateFraction(400, one, 2.5, 2), kQueueingTail);
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 1, 1.0, 1000, 0, one), 400);
  // 1,000 req/s: two at 500 are 0.92 % late; three at 333.3 fit.
  q.rate_rps = 1000;
  EXPECT_GT(DispatchedQueueLateFraction(500, one, 2.5, 2), kQueueingTail);
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 1, 1.0, 1000, 0, one), 1000.0 / 3);
  // Without the expiry, batch 1 keeps the wait bound: three at 266.7 for
  // 800 req/s.
  q.rate_rps = 800;
  q.lone_queue_expiry = false;
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 1, 1.0, 1000, 0, one), 800.0 / 3);
}

TEST(IgniterProvisionerTest, RotationSizesBatchedReplicasByTheirBatchQueue) {
  // Batches of 1 and 2 at 1 and 1.5 ms, SLO 3 ms, a replica carrying at
  // most 1,200 req/s. Two replicas of 600 req/s, each dealt every other
  // request (Erlang-2 gaps), are 0.23 % late; on their own Poisson
  // streams they would be 3.5 % late.
  IgniterRequest q;
  q.slo_ms = 3;
  q.queueing_check = true;
  q.round_robin_arrivals = true;
  q.lone_batch_queue = true;
  q.rate_rps = 1200;
  const std::vector<double> two = {1.0, 1.5};
  EXPECT_GT(BatchQueueLateFraction(600, two, 3), kQueueingTail);
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 2, 1.5, 1200, 0, two), 600);
  // 1,600 req/s: two at 800 (1.9 % late at k = 2) do not fit; three at
  // 533.3 do.
  q.rate_rps = 1600;
  EXPECT_GT(BatchQueueLateFraction(800, two, 3, 2), kQueueingTail);
  EXPECT_DOUBLE_EQ(RotationReplicaRps(q, 2, 1.5, 1200, 0, two), 1600.0 / 3);
  // Not without the batches' latencies or the batch queue.
  EXPECT_EQ(RotationReplicaRps(q, 2, 1.5, 1200, 0), 0);
  q.lone_batch_queue = false;
  EXPECT_EQ(RotationReplicaRps(q, 2, 1.5, 1200, 0, two), 0);
}

TEST(IgniterProvisionerTest, BatchOneReplicasAreSizedAsTheDispatcherRunsThem) {
  // 150 req/s at SLO 39 ms: more than one GPU carries, so whole-GPU
  // replicas at b = 1 (10 ms; batch 2 takes 20 > 39 / 2), each on its own
  // Poisson stream (no rotation rule). Sized by the M/D/1 tail wait
  // (10 + W <= 39) a replica carries 39.5 req/s; as the dispatcher's queue
  // (lone_queue_expiry), which turns away the requests that cannot make
  // it, the most whose late fraction stays within 0.5 %: 42.7 req/s, and
  // the residue then needs an 80 % partition instead of a whole GPU.
  const IgniterWorkload a = Linear("a");
  const IgniterModel model(Plain());
  IgniterRequest q{&a, 39, 150, 32, /*queueing_check=*/true};
  q.lone_batch_queue = true;
  auto provision = [&]() {
    auto p = ProvisionIgniter(model, {q}, 8);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->gpus : std::vector<std::vector<IgniterPlacement>>{};
  };
  const auto md1 = provision();
  ASSERT_EQ(md1.size(), 4u);
  const double r1 = md1[0][0].rate_rps;
  EXPECT_EQ(md1[0][0].batch, 1);
  EXPECT_LE(10 + MD1WaitMs(r1 / 100, 10), 39 + 1e-6);
  EXPECT_GT(10 + MD1WaitMs(1.01 * r1 / 100, 10), 39);
  EXPECT_DOUBLE_EQ(md1[3][0].share_percent, 100);
  q.lone_queue_expiry = true;
  const auto dispatched = provision();
  ASSERT_EQ(dispatched.size(), 4u);
  const double r2 = dispatched[0][0].rate_rps;
  EXPECT_EQ(dispatched[0][0].batch, 1);
  EXPECT_GT(r2, 1.05 * r1);
  EXPECT_LE(DispatchedQueueLateFraction(r2, {10.0}, 39), kQueueingTail);
  EXPECT_GT(DispatchedQueueLateFraction(1.01 * r2, {10.0}, 39), kQueueingTail);
  EXPECT_LT(dispatched[3][0].share_percent, 100);
}

TEST(IgniterProvisionerTest, BatchOneReplicasTakeTheWholeGpuHeadroom) {
  // The dispatcher-queue case above with the whole-GPU headroom at 1.05
  // over a latency headroom of 1.1: each batch-1 replica is sized with
  // its prediction scaled by 1.05 / 1.1, 9.545 ms instead of 10.
  const IgniterWorkload a = Linear("a");
  const IgniterModel model(Plain());
  IgniterRequest q{&a, 39, 150, 32, /*queueing_check=*/true};
  q.lone_batch_queue = true;
  q.lone_queue_expiry = true;
  q.whole_gpu_batch1_factor = 1.05 / 1.1;
  auto p = ProvisionIgniter(model, {q}, 8);
  ASSERT_TRUE(p.ok()) << p.status();
  const double ms = 10 * q.whole_gpu_batch1_factor;
  const double r = p->gpus[0][0].rate_rps;
  EXPECT_EQ(p->gpus[0][0].batch, 1);
  EXPECT_DOUBLE_EQ(p->gpus[0][0].share_percent, 100);
  EXPECT_NEAR(p->gpus[0][0].predicted_ms, ms, 1e-9);
  EXPECT_LE(DispatchedQueueLateFraction(r, {ms}, 39), kQueueingTail);
  EXPECT_GT(DispatchedQueueLateFraction(1.01 * r, {ms}, 39), kQueueingTail);
  // A batched replica keeps the latency headroom: the replicated case
  // above (b = 5 at 90 req/s) is planned the same with any factor.
  IgniterRequest batched{&a, 100, 150, 32};
  batched.whole_gpu_batch1_factor = 0.5;
  p = ProvisionIgniter(model, {batched}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->gpus.size(), 2u);
  EXPECT_EQ(p->gpus[0][0].batch, 5);
  EXPECT_NEAR(p->gpus[0][0].rate_rps, 90, 1e-9);
  EXPECT_DOUBLE_EQ(p->gpus[1][0].share_percent, 60);
  // A batch-1 partition that shares its GPU keeps it too: two models at
  // 20 % each (r_lower = 1000 / 50) predict 50 ms whatever the factor.
  const IgniterWorkload b = Linear("b");
  IgniterRequest x{&a, 100, 20, 32}, y{&b, 100, 20, 32};
  x.whole_gpu_batch1_factor = y.whole_gpu_batch1_factor = 0.5;
  p = ProvisionIgniter(model, {x, y}, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->gpus.size(), 1u);
  ASSERT_EQ(p->gpus[0].size(), 2u);
  EXPECT_NEAR(p->gpus[0][0].predicted_ms, 50, 1e-9);
}

}  // namespace
}  // namespace tessera
