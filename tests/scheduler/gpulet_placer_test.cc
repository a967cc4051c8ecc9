#include "scheduler/gpulet_placer.h"

#include <algorithm>
#include <memory>

#include "batching/weighted_round_robin.h"
#include "gtest/gtest.h"
#include "perfmodel/interference_model.h"
#include "scheduler/queue_wait.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::LinearProfile;

// Hand-checked arithmetic. Both models take 1 ms per item on a whole GPU
// and nothing fixed: L(b, p) = b * 100 / p ms, so a gpulet of share p
// serves at most 10 p req/s (1000 / (100 / p)) at any batch, and a
// constant interference factor f cuts that to 10 p / f.
// GPU 0 is split 60/40; its 60 % slot holds the saturated resident A at
// 600 req/s, its solo maximum (beside a neighbour with f = 1.1: 545.45).
// GPU 1 is whole. The newcomer B asks for 100 req/s: its smallest
// partition is 20 % (at most 200 req/s); it cannot time-share A's full
// gpulet, and the best-fitting free slot is GPU 0's 40 % (beside A: at
// most 363.6 req/s, so B itself is fine).
class GpuletPlacerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_a_ = *LatencyModel::FromProfile(LinearProfile("a", 0, 1));
    model_b_ = *LatencyModel::FromProfile(LinearProfile("b", 0, 1));
    a_ = Demand("a", &model_a_, 600);
    b_ = Demand("b", &model_b_, 100);
    for (int i = 0; i < 2; ++i) {
      devices_[i].backend_id = "b0";
      devices_[i].device_id = "gpu" + std::to_string(i);
    }
  }

  static ModelDemand Demand(const std::string& name, const LatencyModel* lm,
                            double rate) {
    ModelDemand d;
    d.name = name;
    d.rate_rps = rate;
    d.slo_ms = 100;
    d.max_batch = 32;
    d.latency = lm;
    d.queueing_check = false;
    d.burst_caps = false;
    return d;
  }

  // GPU 0 = {60 %: A at 600 req/s, 40 % free}; GPU 1 whole (if `gpus` 2).
  std::vector<GpuLayout> Layouts(int gpus) {
    std::vector<GpuLayout> layouts;
    layouts.emplace_back(&devices_[0], std::vector<double>{60, 40});
    layouts[0].slots()[0].slices = {Slice{&a_, 600}};
    EXPECT_TRUE(layouts[0].ResolveSlot(0, nullptr));
    if (gpus == 2) layouts.emplace_back(&devices_[1]);
    return layouts;
  }

  absl::Status Place(GpuletInterferenceCheck check,
                     std::vector<GpuLayout>* layouts) {
    GpuletRules rules = PresetRules(RULES_PRESET_PAPER).gpulet();
    rules.set_interference_check(check);
    rules.set_residue_slack_rps(1);
    const GpuletPlacer placer(interference_, rules);
    return placer.Partition({&b_}, AllowedShares(), /*fixed=*/true, layouts);
  }

  // Planned rate of `model` per (gpu, slot).
  static std::map<std::pair<int, int>, double> Rates(
      const std::vector<GpuLayout>& layouts, const std::string& model) {
    std::map<std::pair<int, int>, double> out;
    for (size_t g = 0; g < layouts.size(); ++g) {
      const auto& slots = layouts[g].slots();
      for (size_t s = 0; s < slots.size(); ++s) {
        for (const Slice& slice : slots[s].slices) {
          if (slice.demand->name == model) {
            out[{static_cast<int>(g), static_cast<int>(s)}] += slice.rate_rps;
          }
        }
      }
    }
    return out;
  }

  LatencyModel model_a_, model_b_;
  ModelDemand a_, b_;
  DeviceSnapshot devices_[2];
  const ConstantInterference mild_{1.1}, strong_{1.5};
  const InterferenceModel* interference_ = &mild_;
};

TEST_F(GpuletPlacerTest, PaperCheckAdmitsTheNewcomerBesideASaturatedResident) {
  auto layouts = Layouts(1);
  ASSERT_TRUE(Place(GPULET_INTERFERENCE_CHECK_PAPER, &layouts).ok());
  // Line 20 checks B's own batch with interference: 100 <= 363.6 req/s.
  // A keeps its solo plan (600 req/s), which interference would break.
  EXPECT_NEAR((Rates(layouts, "b")[{0, 1}]), 100, 1e-9);
  EXPECT_NEAR((Rates(layouts, "a")[{0, 0}]), 600, 1e-9);
}

TEST_F(GpuletPlacerTest,
       StrictCheckRefusesTheNewcomerBesideASaturatedResident) {
  auto one = Layouts(1);
  const absl::Status refused = Place(GPULET_INTERFERENCE_CHECK_STRICT, &one);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  // With a second GPU, B goes there (a whole GPU: the layouts are fixed).
  auto two = Layouts(2);
  ASSERT_TRUE(Place(GPULET_INTERFERENCE_CHECK_STRICT, &two).ok());
  EXPECT_EQ(Rates(two, "b").count({0, 1}), 0u);
  EXPECT_NEAR((Rates(two, "b")[{1, 0}]), 100, 1e-9);
  EXPECT_NEAR((Rates(two, "a")[{0, 0}]), 600, 1e-9);
}

TEST_F(GpuletPlacerTest, ArtifactCheckAdmitsTheNewcomerAndMovesTheShortfall) {
  auto layouts = Layouts(2);
  ASSERT_TRUE(Place(GPULET_INTERFERENCE_CHECK_ARTIFACT, &layouts).ok());
  EXPECT_NEAR((Rates(layouts, "b")[{0, 1}]), 100, 1e-9);
  // Beside B, A sustains 6000 / 11 = 545.45 of its 600 req/s (0.91 >=
  // 0.85): it keeps that (the bisection lands within 600 x 0.15 / 2^10 =
  // 0.09 req/s of it, from below) ...
  const auto a = Rates(layouts, "a");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_NEAR((a.at({0, 0})), 6000.0 / 11, 0.09);
  EXPECT_LE((a.at({0, 0})), 6000.0 / 11 + 1e-6);
  // ... and the 54.5 req/s shortfall is placed in another gpulet (here it
  // time-shares B's: 154.5 req/s at 40 % beside A is within 363.6).
  EXPECT_NEAR((a.at({0, 1})), 600 - a.at({0, 0}), 1e-6);
  // Every gpulet of GPU 0 holds with interference.
  GpuLayout check = layouts[0];
  EXPECT_TRUE(check.Resolve(interference_));
}

TEST_F(GpuletPlacerTest, ArtifactCheckRefusesAResidentThatWouldKeepTooLittle) {
  // With f = 1.5, A would keep 400 / 600 = 0.67 < 0.85: as strict.
  interference_ = &strong_;
  auto layouts = Layouts(1);
  EXPECT_EQ(Place(GPULET_INTERFERENCE_CHECK_ARTIFACT, &layouts).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(GpuletPlacerTest, NoResidueGpuletForARemainderWithinTheSlack) {
  // 400.5 req/s of B on a 40 % gpulet-sized p_eff: a saturated 40 %
  // gpulet serves 400, the 0.5 left is within the 1 req/s slack.
  std::vector<GpuLayout> layouts;
  layouts.emplace_back(&devices_[0], std::vector<double>{40, 60});
  b_.rate_rps = 400.5;
  GpuletRules rules = PresetRules(RULES_PRESET_PAPER).gpulet();
  rules.set_residue_slack_rps(1);
  const GpuletPlacer placer(nullptr, rules);
  ASSERT_TRUE(
      placer.Partition({&b_}, AllowedShares(), /*fixed=*/true, &layouts).ok());
  EXPECT_EQ(Rates(layouts, "b").size(), 1u);
  // Without the slack the remainder takes the 60 % slot.
  std::vector<GpuLayout> strict;
  strict.emplace_back(&devices_[0], std::vector<double>{40, 60});
  rules.set_residue_slack_rps(0);
  ASSERT_TRUE(GpuletPlacer(nullptr, rules)
                  .Partition({&b_}, AllowedShares(), /*fixed=*/true, &strict)
                  .ok());
  EXPECT_EQ(Rates(strict, "b").size(), 2u);
}

TEST_F(GpuletPlacerTest, OccupancyWeightingChargesTheNeighboursBusyFraction) {
  // A at 300 req/s on the 60 % slot is busy half the time (300 x 1.667 ms
  // per request). B beside it on the 40 % slot (2.5 ms per request solo)
  // is planned at 2.5 x 1.5 = 3.75 ms per request under the worst-case
  // rule, and at 2.5 x (1 + 0.5 x 0.5) = 3.125 with occupancy weighting.
  for (bool weighted : {false, true}) {
    GpuLayout gpu(&devices_[0], std::vector<double>{60, 40});
    gpu.set_occupancy_weighted_interference(weighted);
    gpu.slots()[0].slices = {Slice{&a_, 300}};
    ASSERT_TRUE(gpu.ResolveSlot(0, nullptr));
    ASSERT_NEAR(gpu.slots()[0].schedule.occupancy, 0.5, 1e-9);
    gpu.slots()[1].slices = {Slice{&b_, 100}};
    ASSERT_TRUE(gpu.ResolveSlot(1, &strong_));
    const GpuletSchedule& sb = gpu.slots()[1].schedule;
    EXPECT_NEAR(sb.exec_ms[0] / sb.batches[0], weighted ? 3.125 : 3.75, 1e-9)
        << weighted;
  }
}

TEST_F(GpuletPlacerTest, InterferenceWithinHeadroomPlansTheLargerFactor) {
  // B beside A (f = 1.1, then 1.5) with a 1.2 latency headroom: 2.5 ms per
  // request solo on 40 %. Charged on top of each other: 2.5 x 1.2 x 1.1 =
  // 3.3 ms; within the headroom: 2.5 x max(1.2, 1.1) = 3.0 ms. A factor
  // above the headroom is planned as it is: 2.5 x 1.5 = 3.75 ms (not 4.5).
  b_.latency_scale = 1.2;
  for (const auto* f : {&mild_, &strong_}) {
    for (bool within : {false, true}) {
      GpuLayout gpu(&devices_[0], std::vector<double>{60, 40});
      gpu.set_interference_within_headroom(within);
      gpu.slots()[0].slices = {Slice{&a_, 300}};
      ASSERT_TRUE(gpu.ResolveSlot(0, nullptr));
      gpu.slots()[1].slices = {Slice{&b_, 100}};
      ASSERT_TRUE(gpu.ResolveSlot(1, f));
      const GpuletSchedule& sb = gpu.slots()[1].schedule;
      const double want =
          f == &mild_ ? (within ? 3.0 : 3.3) : (within ? 3.75 : 4.5);
      EXPECT_NEAR(sb.exec_ms[0] / sb.batches[0], want, 1e-9) << within;
    }
  }
}

TEST_F(GpuletPlacerTest, InterferenceHeadroomKeepsAMarginOnTheFactor) {
  // The same B beside A, 2.5 ms per request solo, latency headroom 1.2,
  // interference headroom 1.05: f = 1.1 gives max(1.2, 1.155) = 1.2,
  // 3.0 ms (the headroom covers it, as within); f = 1.5 gives
  // max(1.2, 1.575), 3.9375 ms (between within's 3.75 and the
  // product's 4.5).
  b_.latency_scale = 1.2;
  for (const auto* f : {&mild_, &strong_}) {
    GpuLayout gpu(&devices_[0], std::vector<double>{60, 40});
    gpu.set_interference_headroom(1.05);
    gpu.slots()[0].slices = {Slice{&a_, 300}};
    ASSERT_TRUE(gpu.ResolveSlot(0, nullptr));
    gpu.slots()[1].slices = {Slice{&b_, 100}};
    ASSERT_TRUE(gpu.ResolveSlot(1, f));
    const GpuletSchedule& sb = gpu.slots()[1].schedule;
    EXPECT_NEAR(sb.exec_ms[0] / sb.batches[0], f == &mild_ ? 3.0 : 3.9375,
                1e-9);
  }
}

TEST_F(GpuletPlacerTest, LeftoverFillUsesASmallerFreeGpulet) {
  // Partition sizes {50, 100}: B at 300 req/s (at most 10 p req/s) needs
  // a 50 % gpulet. GPU 0 = {60 %: A, 40 % free}: the paper's pass finds
  // no free gpulet of 50 % or more and fails.
  std::vector<GpuLayout> layouts = Layouts(1);
  b_.rate_rps = 300;
  const std::vector<double> grid = {50, 100};
  GpuletRules rules = PresetRules(RULES_PRESET_PAPER).gpulet();
  auto refused = layouts;
  EXPECT_EQ(GpuletPlacer(nullptr, rules)
                .Partition({&b_}, grid, /*fixed=*/true, &refused)
                .code(),
            absl::StatusCode::kResourceExhausted);
  // leftover_fill: the free 40 % saturates at 400 req/s >= 300, so it
  // serves all of B.
  rules.set_leftover_fill(true);
  auto filled = layouts;
  ASSERT_TRUE(GpuletPlacer(nullptr, rules)
                  .Partition({&b_}, grid, /*fixed=*/true, &filled)
                  .ok());
  EXPECT_NEAR((Rates(filled, "b")[{0, 1}]), 300, 1e-6);
  // At 500 req/s the 40 % serves 400 and 100 are left without room.
  b_.rate_rps = 500;
  auto short_of_room = layouts;
  EXPECT_EQ(GpuletPlacer(nullptr, rules)
                .Partition({&b_}, grid, /*fixed=*/true, &short_of_room)
                .code(),
            absl::StatusCode::kResourceExhausted);
}

// L(b, p) = (2 + b) * 100 / p ms on the whole GPU and 1.5x that on any
// smaller gpulet: a split costs a third of the throughput per percent. At
// SLO 40 ms the saturated batch (2 L <= SLO) and throughput by size:
// 20 %: none; 40 %: b 3, 160 req/s; 50 %: b 4, 222.2; 60 %: b 6, 300;
// 80 %: b 8, 426.7; 100 %: b 18, 900 (9 req/s per percent, 5.3 at 80 %).
class GpuletKneeRuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = *LatencyModel::FromProfile(testing::KneeProfile("k", 100, 1.5));
    k_.name = "k";
    k_.rate_rps = 800;
    k_.slo_ms = 40;
    k_.max_batch = 32;
    k_.latency = &model_;
    k_.queueing_check = false;
    k_.burst_caps = false;
    device_.backend_id = "b0";
    device_.device_id = "gpu0";
  }

  absl::Status Place(GpuletKneeRule knee, std::vector<GpuLayout>* layouts) {
    GpuletRules rules = PresetRules(RULES_PRESET_PAPER).gpulet();
    rules.set_knee_rule(knee);
    return GpuletPlacer(nullptr, rules)
        .Partition({&k_}, AllowedShares(), /*fixed=*/false, layouts);
  }

  LatencyModel model_;
  ModelDemand k_;
  DeviceSnapshot device_;
};

TEST_F(GpuletKneeRuleTest,
       ArtifactKneeIsTheLargestGainPerPercentBelowTheWholeGpu) {
  // Gains per percent: (20, 40) 8.0, (40, 50) 6.2, (50, 60) 7.8,
  // (60, 80) 6.3; (80, 100) is never examined.
  EXPECT_EQ(GpuletPlacer::MaxEfficientPartition(k_, AllowedShares(),
                                                GPULET_KNEE_RULE_ARTIFACT),
            40);
}

TEST_F(GpuletKneeRuleTest, PerShareKneeTakesTheWholeGpuWhereItIsMostEfficient) {
  EXPECT_EQ(GpuletPlacer::MaxEfficientPartition(k_, AllowedShares(),
                                                GPULET_KNEE_RULE_PER_SHARE),
            100);
}

TEST_F(GpuletKneeRuleTest, ArtifactThenPerShareRedoesAPassThatFails) {
  // 800 req/s on one GPU. The artifact's knee: a saturated 40 % gpulet
  // (160) splits the GPU 40/60, the 60 % serves 300 at most, and 340 are
  // left with no room.
  std::vector<GpuLayout> artifact;
  artifact.emplace_back(&device_);
  EXPECT_EQ(Place(GPULET_KNEE_RULE_ARTIFACT, &artifact).code(),
            absl::StatusCode::kResourceExhausted);
  // The per-share knee is the whole GPU (900 >= 800): one gpulet.
  for (GpuletKneeRule knee :
       {GPULET_KNEE_RULE_PER_SHARE, GPULET_KNEE_RULE_ARTIFACT_THEN_PER_SHARE}) {
    std::vector<GpuLayout> layouts;
    layouts.emplace_back(&device_);
    ASSERT_TRUE(Place(knee, &layouts).ok()) << GpuletKneeRule_Name(knee);
    ASSERT_EQ(layouts[0].slots().size(), 1u) << GpuletKneeRule_Name(knee);
    EXPECT_EQ(layouts[0].slots()[0].share_percent, 100);
    ASSERT_EQ(layouts[0].slots()[0].slices.size(), 1u);
    EXPECT_NEAR(layouts[0].slots()[0].slices[0].rate_rps, 800, 1e-9);
  }
  // At 150 req/s the artifact's pass succeeds and is kept: one 40 %
  // gpulet, not the whole GPU.
  k_.rate_rps = 150;
  std::vector<GpuLayout> light;
  light.emplace_back(&device_);
  ASSERT_TRUE(Place(GPULET_KNEE_RULE_ARTIFACT_THEN_PER_SHARE, &light).ok());
  ASSERT_FALSE(light[0].slots().empty());
  EXPECT_EQ(light[0].slots()[0].share_percent, 40);
}

TEST_F(GpuletKneeRuleTest, OneGpuletWhenSmallerThanTheSaturatedSplit) {
  // 400 req/s, the artifact's knee 40 % (160 req/s saturated). The paper's
  // path: a saturated 40 % gpulet, then 240 left > 160 takes the GPU's
  // other 60 % whole (it serves up to 300): two gpulets, 100 %.
  k_.rate_rps = 400;
  std::vector<GpuLayout> paper;
  paper.emplace_back(&device_);
  ASSERT_TRUE(Place(GPULET_KNEE_RULE_ARTIFACT, &paper).ok());
  ASSERT_EQ(paper[0].slots().size(), 2u);
  EXPECT_EQ(paper[0].slots()[0].share_percent, 40);
  EXPECT_EQ(paper[0].slots()[1].share_percent, 60);
  // The option compares one gpulet for all 400 (80 %: b 8, L 18.75 ms,
  // d 20 ms, d + L = 38.75 <= 40) with the paper's count, 2 x 40 % + a
  // 40 % residue for 80 req/s = 120 %: one 80 % gpulet, 20 % left free.
  GpuletRules rules = PresetRules(RULES_PRESET_PAPER).gpulet();
  rules.set_knee_rule(GPULET_KNEE_RULE_ARTIFACT);
  rules.set_one_gpulet_when_smaller(true);
  std::vector<GpuLayout> one;
  one.emplace_back(&device_);
  ASSERT_TRUE(GpuletPlacer(nullptr, rules)
                  .Partition({&k_}, AllowedShares(), /*fixed=*/false, &one)
                  .ok());
  ASSERT_EQ(one[0].slots().size(), 2u);
  EXPECT_EQ(one[0].slots()[0].share_percent, 80);
  ASSERT_EQ(one[0].slots()[0].slices.size(), 1u);
  EXPECT_NEAR(one[0].slots()[0].slices[0].rate_rps, 400, 1e-9);
  EXPECT_TRUE(one[0].slots()[1].free());
  // With no room for that gpulet (the GPU already split 40/60), the
  // paper's saturated gpulets are placed instead.
  std::vector<GpuLayout> split;
  split.emplace_back(&device_, std::vector<double>{40, 60});
  ASSERT_TRUE(GpuletPlacer(nullptr, rules)
                  .Partition({&k_}, AllowedShares(), /*fixed=*/true, &split)
                  .ok());
  EXPECT_FALSE(split[0].slots()[0].free());
  EXPECT_FALSE(split[0].slots()[1].free());
}

// A model that needs several whole GPUs: L(b) = 2 + b ms, SLO 20 ms, the
// queueing bound on. With SharedRules.round_robin_arrivals and
// lone_batch_queue its rate is split evenly over n gpulets, each dealt
// every n-th request by the router, and checked as its batch queue with
// Erlang-n gaps: at 2,000 req/s three whole GPUs of 666.7 req/s, where on
// their own Poisson streams three saturated GPUs of 644.5 need a 50 %
// gpulet for the residue.
TEST(GpuletRotationTest, EvenSplitOverGpuletsTheRouterRotates) {
  ClusterSnapshot s = testing::Snapshot(4);
  testing::AddModel(&s, LinearProfile("a", 2, 1), 2000, 20);
  PolicyOptions o = testing::PaperRules();
  o.rules.mutable_shared()->set_queueing_check(true);
  auto gpulets = [&](bool rotation) {
    o.rules.mutable_shared()->set_round_robin_arrivals(rotation);
    o.rules.mutable_shared()->set_lone_batch_queue(rotation);
    auto plan = testing::RunPolicyWith("gpulet-noint", s, o);
    EXPECT_TRUE(plan.ok()) << plan.status();
    std::vector<std::pair<double, double>> out;  // (share, rate)
    if (!plan.ok()) return out;
    for (const DevicePlan& d : plan->devices()) {
      for (const GpuletPlan& g : d.gpulets()) {
        out.emplace_back(g.share_percent(), g.models(0).rate_rps());
      }
    }
    return out;
  };
  const auto poisson = gpulets(false);
  const auto rotated = gpulets(true);
  double poisson_share = 0, rotated_share = 0;
  for (const auto& [share, rate] : poisson) poisson_share += share;
  for (const auto& [share, rate] : rotated) rotated_share += share;
  EXPECT_EQ(poisson_share, 350);
  EXPECT_EQ(rotated_share, 300);
  ASSERT_EQ(rotated.size(), 3u);
  const int n = static_cast<int>(rotated.size());
  std::vector<double> rates;
  for (const auto& [share, rate] : rotated) {
    EXPECT_DOUBLE_EQ(rate, 2000.0 / n);
    rates.push_back(rate);
  }
  // The router keeps each n picks apart, and a gpulet fed that way holds
  // at its back-to-back batch with the cap 2 L <= SLO allows or more.
  const std::vector<int> spacing = MinRoundRobinSpacings(rates);
  EXPECT_EQ(*std::min_element(spacing.begin(), spacing.end()), n);
  std::vector<double> batch_ms;
  for (int c = 1; c <= 8; ++c) batch_ms.push_back(2.0 + c);
  EXPECT_LE(BatchQueueLateFraction(2000.0 / n, batch_ms, 20,
                                   std::min(n, kBatchQueueMaxSpacing)),
            kQueueingTail);
  EXPECT_GT(BatchQueueLateFraction(2000.0 / n, batch_ms, 20), kQueueingTail);
}

}  // namespace
}  // namespace tessera
