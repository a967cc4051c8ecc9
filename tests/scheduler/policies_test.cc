// sbp, greedy, gpulet and gpulet-noint on hand-built snapshots whose right
// answers follow from the profiles by hand.
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "perfmodel/interference_model.h"
#include "scheduler/gpulet_policy.h"
#include "scheduler/plan_ids.h"
#include "scheduler/planning_rules.h"
#include "scheduler/policy_registry.h"
#include "scheduler/time_share_solver.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using ::testing::HasSubstr;
using testing::LinearProfile;
using testing::Snapshot;

absl::StatusOr<Plan> RunPolicy(
    const std::string& policy, const ClusterSnapshot& snapshot,
    std::shared_ptr<const InterferenceModel> intf =
        std::make_shared<ConstantInterference>(1.2)) {
  return testing::RunPolicyWith(policy, snapshot,
                                testing::PaperRules(std::move(intf)));
}

int GpusUsed(const Plan& plan) { return plan.devices_size(); }
int Gpulets(const Plan& plan) {
  int n = 0;
  for (const auto& d : plan.devices()) n += d.gpulets_size();
  return n;
}

const char* kAll[] = {"sbp", "greedy", "gpulet", "gpulet-noint"};

TEST(PoliciesTest, OneModelFitsOneGpulet) {
  // L(b,100) = 2 + b; 100 req/s with SLO 40 ms fits a 20 % gpulet
  // (L(1,20) = 15: d = 20 ms -> b = 2, L(2,20) = 20, 20 + 20 <= 40).
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("m", 2, 1), 100, 40);
  for (const char* policy : kAll) {
    auto plan = RunPolicy(policy, s);
    ASSERT_TRUE(plan.ok()) << policy << ": " << plan.status();
    EXPECT_EQ(GpusUsed(*plan), 1) << policy;
    EXPECT_EQ(Gpulets(*plan), 1) << policy;
    EXPECT_NEAR(PlannedRateRps(*plan, "m"), 100, 1e-6) << policy;
  }
  auto gpulet = RunPolicy("gpulet-noint", s);
  EXPECT_EQ(gpulet->devices(0).gpulets(0).share_percent(), 20);
  // sbp has only whole GPUs.
  EXPECT_EQ(RunPolicy("sbp", s)->devices(0).gpulets(0).share_percent(), 100);
}

TEST(PoliciesTest, TwoLightModelsTimeShare) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("x", 1, 0.5), 20, 100);
  AddModel(&s, LinearProfile("y", 1, 0.5), 20, 100);
  for (const char* policy : {"sbp", "gpulet-noint", "gpulet"}) {
    auto plan = RunPolicy(policy, s);
    ASSERT_TRUE(plan.ok()) << policy << ": " << plan.status();
    EXPECT_EQ(Gpulets(*plan), 1) << policy << " should time-share one gpulet";
    EXPECT_EQ(plan->devices(0).gpulets(0).models_size(), 2) << policy;
  }
  // Greedy never time-shares: two gpulets (on one GPU).
  auto greedy = RunPolicy("greedy", s);
  ASSERT_TRUE(greedy.ok());
  EXPECT_EQ(Gpulets(*greedy), 2);
  EXPECT_EQ(GpusUsed(*greedy), 1);
}

TEST(PoliciesTest, HeavyModelNeedsTwoGpus) {
  // One whole GPU serves at most 800 req/s at SLO 20 ms (b = 8, L = 10).
  ClusterSnapshot s = Snapshot(3);
  AddModel(&s, LinearProfile("heavy", 2, 1), 1200, 20);
  for (const char* policy : kAll) {
    auto plan = RunPolicy(policy, s, std::make_shared<NoInterference>());
    ASSERT_TRUE(plan.ok()) << policy << ": " << plan.status();
    EXPECT_EQ(GpusUsed(*plan), 2) << policy;
    EXPECT_NEAR(PlannedRateRps(*plan, "heavy"), 1200, 1e-6) << policy;
  }
  // With one GPU it is unschedulable, and the message names the model.
  ClusterSnapshot one = Snapshot(1);
  one.models = s.models;
  for (const char* policy : kAll) {
    auto plan = RunPolicy(policy, one);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted)
        << policy;
    EXPECT_THAT(plan.status().message(), HasSubstr("'heavy'")) << policy;
  }
}

// The paper's rules with the queueing bound and the rotation rules on.
PolicyOptions RotationRules() {
  PolicyOptions o = testing::PaperRules();
  o.rules.mutable_shared()->set_queueing_check(true);
  o.rules.mutable_shared()->set_round_robin_arrivals(true);
  o.rules.mutable_shared()->set_lone_batch_queue(true);
  return o;
}

// The rates of `policy`'s gpulets, each expected to take a whole GPU.
std::vector<double> WholeGpuRates(const char* policy, const ClusterSnapshot& s,
                                  const PolicyOptions& o) {
  auto plan = testing::RunPolicyWith(policy, s, o);
  EXPECT_TRUE(plan.ok()) << policy << ": " << plan.status();
  std::vector<double> rates;
  if (!plan.ok()) return rates;
  for (const DevicePlan& d : plan->devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      EXPECT_EQ(g.share_percent(), 100) << policy;
      rates.push_back(g.models(0).rate_rps());
    }
  }
  return rates;
}

TEST(PoliciesTest, SbpAndGreedySplitEvenlyWhereTheResidueFitsNoGpu) {
  // L(b) = 2 + b ms, SLO 7.5 ms (batch 1 only), 600 req/s, the queueing
  // bound and the rotation rules on. A whole GPU carries 120.4 req/s on
  // its own Poisson stream, 213.6 dealt every other request and 266.0
  // every third (SaturatedThroughput). The rotation's split, two GPUs at
  // 213.6, leaves 172.8 req/s that no GPU carries on its own stream;
  // three GPUs at 200 req/s, each dealt every third request, hold.
  ClusterSnapshot s = Snapshot(4);
  AddModel(&s, LinearProfile("a", 2, 1), 600, 7.5);
  PolicyOptions o = RotationRules();
  for (const char* policy : {"sbp", "greedy"}) {
    EXPECT_THAT(WholeGpuRates(policy, s, o),
                ::testing::ElementsAre(::testing::DoubleEq(200),
                                       ::testing::DoubleEq(200),
                                       ::testing::DoubleEq(200)))
        << policy;
  }
  // Without the rotation rules, at 120.4 req/s per GPU, it needs five.
  o.rules.mutable_shared()->set_round_robin_arrivals(false);
  EXPECT_FALSE(testing::RunPolicyWith("sbp", s, o).ok());
  EXPECT_FALSE(testing::RunPolicyWith("greedy", s, o).ok());
}

TEST(PoliciesTest, SbpAndGreedySplitEvenlyWhereThatTakesFewerGpus) {
  // The model above at 400 req/s. No spacing k >= 2 has k gpulets of its
  // rate within 400 (213.6 and 266.0 fit once each), so the saturated
  // GPUs are planned on their own streams: three at 120.4 and a residue
  // of 38.8 req/s that fits alone, four GPUs in all. Split evenly, two
  // GPUs at 200 req/s, each dealt every other request, hold.
  ClusterSnapshot s = Snapshot(4);
  AddModel(&s, LinearProfile("a", 2, 1), 400, 7.5);
  for (const char* policy : {"sbp", "greedy"}) {
    EXPECT_THAT(WholeGpuRates(policy, s, RotationRules()),
                ::testing::ElementsAre(::testing::DoubleEq(200),
                                       ::testing::DoubleEq(200)))
        << policy;
  }
}

TEST(PoliciesTest, ImpossibleSloIsUnschedulableWithModelNamed) {
  ClusterSnapshot s = Snapshot(4);
  AddModel(&s, LinearProfile("fine", 2, 1), 10, 100);
  AddModel(&s, LinearProfile("tight", 2, 1), 10, 5);  // 2 L(1,100) = 6 > 5
  for (const char* policy : kAll) {
    auto plan = RunPolicy(policy, s);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted)
        << policy;
    EXPECT_THAT(plan.status().message(), HasSubstr("'tight'")) << policy;
  }
}

TEST(PoliciesTest, InterferenceMakesGpuletMoreConservative) {
  // L(b,p) = (4 + 2b) 100 / p, 300 req/s each, SLO 40 ms: without
  // interference a GPU split 40/60 serves one model (100 + 200 req/s).
  // With a 1.5x factor a 40 % gpulet beside anything misses the SLO even at
  // batch 1 (2 * 1.5 * 15 > 40), and Algorithm 1 only ever splits GPUs, so
  // each model takes three 40 % gpulets on three GPUs under the strict
  // check.
  ClusterSnapshot s = Snapshot(8);
  AddModel(&s, LinearProfile("p", 4, 2), 300, 40);
  AddModel(&s, LinearProfile("q", 4, 2), 300, 40);
  auto noint = RunPolicy("gpulet-noint", s);
  // The strict check (every gpulet of the GPU re-solved with interference).
  PolicyOptions strict =
      testing::PaperRules(std::make_shared<ConstantInterference>(1.5));
  strict.rules.mutable_gpulet()->set_interference_check(
      GPULET_INTERFERENCE_CHECK_STRICT);
  // Algorithm 1's own sizing: the artifact's knee, no single gpulet in
  // place of the saturated split (either would serve each model on one
  // whole-enough gpulet with no neighbour).
  strict.rules.mutable_gpulet()->set_knee_rule(GPULET_KNEE_RULE_ARTIFACT);
  strict.rules.mutable_gpulet()->set_one_gpulet_when_smaller(false);
  auto intf = testing::RunPolicyWith("gpulet", s, strict);
  ASSERT_TRUE(noint.ok()) << noint.status();
  ASSERT_TRUE(intf.ok()) << intf.status();
  double share_noint = 0, share_intf = 0;
  for (const auto& d : noint->devices())
    for (const auto& g : d.gpulets()) share_noint += g.share_percent();
  for (const auto& d : intf->devices())
    for (const auto& g : d.gpulets()) share_intf += g.share_percent();
  EXPECT_GT(share_intf, share_noint);
  EXPECT_EQ(GpusUsed(*noint), 2);
  EXPECT_EQ(GpusUsed(*intf), 6);
}

TEST(PoliciesTest, GpuletNeedsAnInterferenceModel) {
  auto p = PolicyRegistry::Create("gpulet", PolicyOptions());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PoliciesTest, PlansRespectShareAndBatchLimits) {
  ClusterSnapshot s = Snapshot(4);
  AddModel(&s, LinearProfile("a", 2, 1), 700, 30, 16);
  AddModel(&s, LinearProfile("b", 1, 0.2), 900, 20, 32);
  AddModel(&s, LinearProfile("c", 5, 3), 60, 120, 8);
  for (const char* policy : kAll) {
    auto plan = RunPolicy(policy, s);
    ASSERT_TRUE(plan.ok()) << policy << ": " << plan.status();
    std::set<std::string> gpus;
    for (const auto& d : plan->devices()) {
      EXPECT_TRUE(gpus.insert(d.device_id()).second) << policy;
      double total = 0;
      EXPECT_LE(d.gpulets_size(), 2) << policy;
      for (const auto& g : d.gpulets()) {
        total += g.share_percent();
        for (const auto& a : g.models()) {
          EXPECT_GE(a.batch_size(), 1);
          EXPECT_LE(a.batch_size(), a.model() == "c" ? 8 : 32);
        }
      }
      EXPECT_LE(total, 100 + 1e-9) << policy;
    }
    EXPECT_NEAR(PlannedRateRps(*plan, "a"), 700, 1e-6) << policy;
    EXPECT_NEAR(PlannedRateRps(*plan, "b"), 900, 1e-6) << policy;
    EXPECT_NEAR(PlannedRateRps(*plan, "c"), 60, 1e-6) << policy;
  }
}

TEST(PolicyInputsTest, CarryTheOptionsHeadroom) {
  ClusterSnapshot s = Snapshot(1);
  AddModel(&s, LinearProfile("m", 2, 1), 100, 40);
  PolicyOptions options;
  options.rules.mutable_shared()->set_latency_headroom(1.25);
  options.rules.mutable_shared()->set_rate_headroom(1.5);
  options.rules.mutable_shared()->set_queueing_check(false);
  auto inputs = PolicyInputs::FromSnapshot(s, options);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  ASSERT_EQ((*inputs)->demands().size(), 1u);
  const ModelDemand& d = (*inputs)->demands()[0];
  EXPECT_DOUBLE_EQ(d.rate_rps, 150);
  EXPECT_FALSE(d.queueing_check);
  // L(1,50) = 6 ms, planned with 25 % headroom; a whole-GPU gpulet plans
  // L(1,100) = 3 ms with the preset's whole-GPU headroom, 1.05.
  EXPECT_DOUBLE_EQ(PlannedLatency(d, 1, 50), 7.5);
  EXPECT_DOUBLE_EQ(PlannedLatency(d, 1, 100), 3.15);
  // It never exceeds latency_headroom.
  options.rules.mutable_shared()->set_latency_headroom(1.02);
  auto low = PolicyInputs::FromSnapshot(s, options);
  ASSERT_TRUE(low.ok()) << low.status();
  EXPECT_DOUBLE_EQ(PlannedLatency((*low)->demands()[0], 1, 100), 3.06);
}

// SharedRules.lone_queue_dispatcher reaches the demands only with
// lone_queue_expiry, which it extends from cap 1 to every cap.
TEST(PolicyInputsTest, LoneQueueDispatcherNeedsTheExpiryRule) {
  ClusterSnapshot s = Snapshot(1);
  AddModel(&s, LinearProfile("m", 2, 1), 100, 40);
  auto demand_of = [&](const PlanningRules& rules) {
    PolicyOptions options;
    options.rules = rules;
    auto inputs = PolicyInputs::FromSnapshot(s, options);
    EXPECT_TRUE(inputs.ok()) << inputs.status();
    EXPECT_EQ((*inputs)->demands().size(), 1u);
    return (*inputs)->demands().front();
  };
  const ModelDemand tessera = demand_of(PresetRules(RULES_PRESET_TESSERA));
  EXPECT_TRUE(tessera.lone_queue_expiry);
  EXPECT_TRUE(tessera.lone_queue_dispatcher);
  PlanningRules no_expiry = PresetRules(RULES_PRESET_TESSERA);
  no_expiry.mutable_shared()->set_lone_queue_expiry(false);
  EXPECT_FALSE(demand_of(no_expiry).lone_queue_dispatcher);
  PlanningRules off = PresetRules(RULES_PRESET_TESSERA);
  off.mutable_shared()->set_lone_queue_dispatcher(false);
  EXPECT_TRUE(demand_of(off).lone_queue_expiry);
  EXPECT_FALSE(demand_of(off).lone_queue_dispatcher);
  EXPECT_FALSE(
      demand_of(PresetRules(RULES_PRESET_PAPER)).lone_queue_dispatcher);
}

TEST(PolicyInputsTest, PoliciesGiveTheSamePlanFromSharedInputs) {
  // One PolicyInputs (and its memos) shared by every policy in turn, as
  // tessera's seeds share it, gives each the plan it makes alone. igniter
  // and las plan with their own headroom, so they must not use inputs
  // built under the shared headroom.
  ClusterSnapshot s = Snapshot(4);
  AddModel(&s, LinearProfile("a", 2, 1), 300, 40);
  AddModel(&s, LinearProfile("b", 1, 0.5), 200, 30);
  AddModel(&s, LinearProfile("c", 4, 2), 50, 80);
  PolicyOptions options;  // the tessera preset
  options.interference = std::make_shared<ConstantInterference>(1.2);
  options.rules.mutable_igniter()->set_rate_headroom(1.3);
  options.rules.mutable_las()->set_latency_headroom(1.2);
  auto inputs = PolicyInputs::FromSnapshot(s, options);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  EXPECT_TRUE((*inputs)->BuiltUnder(options.rules.shared()));
  SharedRules other = options.rules.shared();
  other.set_rate_headroom(1.3);
  EXPECT_FALSE((*inputs)->BuiltUnder(other));
  for (const char* name :
       {"sbp", "greedy", "gpulet", "gpulet-noint", "igniter", "las"}) {
    auto policy = PolicyRegistry::Create(name, options);
    ASSERT_TRUE(policy.ok()) << name << ": " << policy.status();
    auto alone = (*policy)->Schedule(s);
    auto shared = (*policy)->ScheduleWithInputs(s, **inputs);
    ASSERT_TRUE(alone.ok()) << name << ": " << alone.status();
    ASSERT_TRUE(shared.ok()) << name << ": " << shared.status();
    EXPECT_EQ(shared->SerializeAsString(), alone->SerializeAsString()) << name;
  }
}

TEST(GpuletKneeTest, MaxEfficientPartitionFollowsTheKnee) {
  // Fixed cost dominates below 50 %: L(b,p) = (2 + b) * 100 / p for p >= 50
  // and 3x that below (small partitions starve).
  auto lm = LatencyModel::FromProfile(testing::KneeProfile("k", 50, 3.0));
  ASSERT_TRUE(lm.ok());
  ModelDemand m{"k", 100, 40, 32, &*lm};
  // Throughput jumps most from 40 % to 50 %: p_eff = 50.
  EXPECT_EQ(GpuletPlacer::MaxEfficientPartition(m, AllowedShares(),
                                                GPULET_KNEE_RULE_ARTIFACT),
            50);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Largest uniform rate scale (5 % steps) at which `policy` returns a plan.
double MaxSchedulableScale(const SchedulingPolicy& policy,
                           const ClusterSnapshot& base) {
  double best = 0;
  for (double s = 0.05; s < 40; s *= 1.05) {
    ClusterSnapshot snap = base;
    for (auto& m : snap.models) m.rate_rps *= s;
    if (!policy.Schedule(snap).ok()) break;
    best = s;
  }
  return best;
}

TEST(IdealPolicyTest, AtLeastAsGoodAsEveryPolicyOnTwoGpus) {
  std::vector<ClusterSnapshot> cases;
  {
    ClusterSnapshot s = Snapshot(2);  // a heavy and a light model
    AddModel(&s, LinearProfile("heavy", 4, 2), 100, 40);
    AddModel(&s, LinearProfile("light", 1, 0.3), 100, 20);
    cases.push_back(s);
  }
  {
    ClusterSnapshot s = Snapshot(2);  // three similar models
    AddModel(&s, LinearProfile("x", 2, 1), 100, 30);
    AddModel(&s, LinearProfile("y", 3, 1), 100, 40);
    AddModel(&s, LinearProfile("z", 1, 1), 100, 25);
    cases.push_back(s);
  }
  {
    ClusterSnapshot s = Snapshot(2);  // one fast model, tight SLO
    AddModel(&s, LinearProfile("fast", 0.5, 0.2), 100, 6);
    cases.push_back(s);
  }
  // Like with like: ideal planning without interference against the
  // policies that ignore it (sbp, greedy, gpulet-noint), and ideal with
  // the 1.1x factor against gpulet with the same factor.
  PolicyOptions blind;
  blind.interference = std::make_shared<NoInterference>();
  PolicyOptions aware;
  aware.interference = std::make_shared<ConstantInterference>(1.1);
  const std::vector<std::pair<const char*, const PolicyOptions*>> rivals = {
      {"sbp", &blind},
      {"greedy", &blind},
      {"gpulet-noint", &blind},
      {"gpulet", &aware}};
  for (size_t c = 0; c < cases.size(); ++c) {
    for (const auto& [name, options] : rivals) {
      auto ideal = PolicyRegistry::Create("ideal", *options);
      auto other = PolicyRegistry::Create(name, *options);
      ASSERT_TRUE(ideal.ok() && other.ok());
      const double ideal_scale = MaxSchedulableScale(**ideal, cases[c]);
      const double s = MaxSchedulableScale(**other, cases[c]);
      EXPECT_GT(ideal_scale, 0) << "case " << c;
      EXPECT_GE(ideal_scale, s) << "case " << c << ": ideal " << ideal_scale
                                << " < " << name << " " << s;
    }
  }
}

TEST(IdealPolicyTest, RefusesClustersBeyondItsSearch) {
  ClusterSnapshot s = Snapshot(2);
  for (int i = 0; i < 5; ++i) {
    AddModel(&s, LinearProfile("m" + std::to_string(i), 1, 0.5), 10, 100);
  }
  PolicyOptions options;
  auto ideal = PolicyRegistry::Create("ideal", options);
  EXPECT_EQ((*ideal)->Schedule(s).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ShareGridTest, DevicesWithTheirOwnGridUseIt) {
  DeviceSnapshot gpu, cpu2, cpu4a, cpu4b;
  cpu2.allowed_shares = {50, 100};
  cpu4a.allowed_shares = {25, 50, 75, 100};
  cpu4b.allowed_shares = {25, 50, 75, 100};
  EXPECT_EQ(ShareGrid({&gpu}), AllowedShares());
  EXPECT_EQ(ShareGrid({&cpu4a, &cpu4b}),
            (std::vector<double>{25, 50, 75, 100}));
  // Mixed: the default sizes every declaring device allows.
  EXPECT_EQ(ShareGrid({&gpu, &cpu4a}), (std::vector<double>{50, 100}));
  EXPECT_EQ(ShareGrid({&cpu2, &cpu4a}), (std::vector<double>{50, 100}));
}

TEST(PoliciesTest, ProfilePoliciesUseOnlyTheSharesACpuNodeCanMake) {
  // Two 2-core cpu devices: only 50 % and 100 % partitions exist. Light
  // models would get 20 % gpulets on a GPU grid.
  ClusterSnapshot s = Snapshot(2);
  for (DeviceSnapshot& d : s.devices) {
    d.kind = DEVICE_KIND_CPU;
    d.num_cores = 2;
    d.allowed_shares = {50, 100};
  }
  AddModel(&s, LinearProfile("a", 2, 1), 50, 40);
  AddModel(&s, LinearProfile("b", 2, 1), 50, 40);
  AddModel(&s, LinearProfile("c", 3, 1), 30, 60);
  for (const char* policy : {"greedy", "gpulet", "gpulet-noint"}) {
    auto plan = RunPolicy(policy, s);
    ASSERT_TRUE(plan.ok()) << policy << ": " << plan.status();
    for (const auto& d : plan->devices()) {
      double sum = 0;
      for (const auto& g : d.gpulets()) {
        EXPECT_TRUE(g.share_percent() == 50 || g.share_percent() == 100)
            << policy << " made a " << g.share_percent() << "% partition";
        sum += g.share_percent();
      }
      EXPECT_LE(sum, 100) << policy;
    }
    for (const char* m : {"a", "b", "c"}) {
      EXPECT_GT(PlannedRateRps(*plan, m), 0) << policy << " left out " << m;
    }
  }
}

}  // namespace
}  // namespace tessera
