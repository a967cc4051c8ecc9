#include "scheduler/inss_policy.h"

#include <algorithm>
#include <atomic>
#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "perfmodel/interference_model.h"
#include "scheduler/bda_placement_policy.h"
#include "scheduler/inss_batching.h"
#include "scheduler/inss_environment.h"
#include "scheduler/policy_registry.h"
#include "tests/scheduler/inss_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using ::testing::HasSubstr;
using testing::InssInfo;
using testing::LinearProfile;
using testing::PaperRules;
using testing::Snapshot;
using ::testing::StartsWith;

// An actor whose heads always prefer the same options.
class FixedActor : public InssActor {
 public:
  FixedActor(InssCheckpointInfo info, std::vector<int> gpu,
             std::vector<int> level_index)
      : info_(std::move(info)),
        gpu_(std::move(gpu)),
        level_(std::move(level_index)) {}
  const InssCheckpointInfo& info() const override { return info_; }
  absl::StatusOr<std::vector<float>> Probabilities(
      const std::vector<float>& state) const override {
    ++calls;
    last_state = state;
    const int n = info_.max_models(), k = info_.gpus(), u = info_.share_units();
    std::vector<float> p(n * (k + u), 0.01f);
    for (int i = 0; i < n; ++i) {
      p[i * k + gpu_[i]] = 0.9f;
      p[n * k + i * u + level_[i]] = 0.9f;
    }
    return p;
  }
  mutable std::atomic<int> calls{0};
  mutable std::vector<float> last_state;

 private:
  InssCheckpointInfo info_;
  std::vector<int> gpu_, level_;
};

class InssPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snapshot_ = Snapshot(2);
    AddModel(&snapshot_, LinearProfile("a", 5, 5), 50, 200);
    AddModel(&snapshot_, LinearProfile("b", 5, 5), 50, 200);
    actor_ = std::make_shared<FixedActor>(InssInfo({"a", "b"}, 2),
                                          std::vector<int>{0, 1},
                                          std::vector<int>{9, 9});
  }
  InssPolicy Policy(std::unique_ptr<SchedulingPolicy> fallback = nullptr) {
    return InssPolicy("inss", PaperRules(), actor_, std::move(fallback));
  }
  ClusterSnapshot snapshot_;
  std::shared_ptr<FixedActor> actor_;
};

TEST_F(InssPolicyTest, ActorPlacesAndBdaBatches) {
  const InssPolicy policy = Policy();
  auto plan = policy.Schedule(snapshot_);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(actor_->calls, 1);
  EXPECT_EQ(plan->policy(), "inss");
  // One model per device, the whole device each. At 50 req/s and SLO
  // 200 ms: 20 (b - 1) + 5 + 5 b <= 200 gives b = 8.
  ASSERT_EQ(plan->devices_size(), 2);
  for (int d = 0; d < 2; ++d) {
    ASSERT_EQ(plan->devices(d).gpulets_size(), 1);
    const GpuletPlan& g = plan->devices(d).gpulets(0);
    EXPECT_EQ(g.share_percent(), 100);
    ASSERT_EQ(g.models_size(), 1);
    EXPECT_EQ(g.models(0).batch_size(), 8);
    EXPECT_EQ(g.models(0).rate_rps(), 50);
  }
  EXPECT_EQ(plan->devices(0).gpulets(0).models(0).model(), "a");
  EXPECT_EQ(plan->devices(1).gpulets(0).models(0).model(), "b");
}

TEST_F(InssPolicyTest, RateChangesOnlyRebatchTheProvisioningInForce) {
  const InssPolicy policy = Policy();
  auto first = policy.Schedule(snapshot_);
  ASSERT_TRUE(first.ok()) << first.status();
  snapshot_.current_plan = *first;
  snapshot_.models[0].rate_rps = 100;
  auto second = policy.Schedule(snapshot_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(actor_->calls, 1);  // BDA alone (Case 1)
  EXPECT_THAT(second->reason(), HasSubstr("BDA"));
  // a at 100 req/s: 10 (b - 1) + 5 + 5 b <= 200 gives b = 13.
  EXPECT_EQ(second->devices(0).gpulets(0).models(0).batch_size(), 13);
  EXPECT_EQ(second->devices(1).gpulets(0).models(0).batch_size(), 8);
}

TEST_F(InssPolicyTest, BdaFailureAsksTheActorAgain) {
  const InssPolicy policy = Policy();
  auto first = policy.Schedule(snapshot_);
  ASSERT_TRUE(first.ok()) << first.status();
  // The plan in force squeezes a into 20 % of gpu 0.
  Plan squeezed = *first;
  squeezed.mutable_devices(0)->mutable_gpulets(0)->set_share_percent(20);
  snapshot_.current_plan = squeezed;
  snapshot_.models[0].rate_rps = 150;
  auto second = policy.Schedule(snapshot_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(actor_->calls, 2);
  EXPECT_THAT(second->reason(), HasSubstr("actor"));
  EXPECT_EQ(second->devices(0).gpulets(0).share_percent(), 100);
  // The state told the actor where a was: 20 % of device 0.
  EXPECT_FLOAT_EQ(actor_->last_state[4], 0.2f);
  EXPECT_FLOAT_EQ(actor_->last_state[5], 0.5f);
}

TEST_F(InssPolicyTest, BdaFailureRaisesTheModelsShareLevel) {
  ClusterSnapshot one = Snapshot(1);
  AddModel(&one, LinearProfile("a", 5, 5), 50, 200);
  AddModel(&one, LinearProfile("b", 5, 5), 50, 200);
  // Levels 1 and 9 on one GPU fit its 10 units: a gets 10 %, below every
  // profiled share, so BDA finds no batch for it. Raised to level 10
  // beside b's 9 (19 > 10 units), the spare 8 units split 4.2 : 3.8 -> a
  // 5 units, b 5 (largest remainder): 50 % each, where b = 7 carries
  // 87.5 req/s.
  auto actor = std::make_shared<FixedActor>(
      InssInfo({"a", "b"}, 1), std::vector<int>{0, 0}, std::vector<int>{0, 8});
  const InssPolicy policy("inss", PaperRules(), actor, nullptr);
  auto plan = policy.Schedule(one);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->devices_size(), 1);
  ASSERT_EQ(plan->devices(0).gpulets_size(), 2);
  EXPECT_EQ(plan->devices(0).gpulets(0).share_percent(), 50);
  EXPECT_EQ(plan->devices(0).gpulets(1).share_percent(), 50);
  EXPECT_EQ(plan->devices(0).gpulets(0).models(0).batch_size(), 7);
  // Without the repair (the paper) the actor's provisioning is final.
  PolicyOptions paper = PaperRules();
  paper.rules.mutable_inss()->set_bda_repair(false);
  const InssPolicy as_written("inss", paper, actor, nullptr);
  EXPECT_EQ(as_written.Schedule(one).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(InssPolicyTest, UnschedulableNamesTheModel) {
  snapshot_.models[1].rate_rps = 1000;
  auto plan = Policy().Schedule(snapshot_);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("'b'"));
}

TEST_F(InssPolicyTest, RefusesSnapshotsTheCheckpointWasNotTrainedFor) {
  ClusterSnapshot other = snapshot_;
  AddModel(&other, LinearProfile("z", 5, 5), 10, 200);
  auto plan = Policy().Schedule(other);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("'z'"));
  // A model it knows without traffic is fine; so is a known one missing.
  ClusterSnapshot idle = snapshot_;
  idle.models[1].rate_rps = 0;
  EXPECT_TRUE(Policy().Schedule(idle).ok());
  ClusterSnapshot three = snapshot_;
  three.devices.push_back(three.devices[0]);
  three.devices[2].device_id = "gpu2";
  plan = Policy().Schedule(three);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("covers 1 to 2 devices"));
  // Instances of known models count against the slots.
  ClusterSnapshot crowded = snapshot_;
  AddModel(&crowded, LinearProfile("a/2", 5, 5), 10, 200);
  plan = Policy().Schedule(crowded);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("at most 2 models"));
  // SLOs far outside the factors it was trained on (batch-1 latency is
  // 10 ms; 200 ms is 20x, past 1.5 x 10x).
  auto slo_actor = std::make_shared<FixedActor>(
      [] {
        InssCheckpointInfo info = InssInfo({"a", "b"}, 2);
        info.add_slo_factors(3);
        info.add_slo_factors(10);
        return info;
      }(),
      std::vector<int>{0, 1}, std::vector<int>{9, 9});
  const InssPolicy slo_policy("inss", PaperRules(), slo_actor, nullptr);
  plan = slo_policy.Schedule(snapshot_);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("20.0x"));
  ClusterSnapshot tighter = snapshot_;
  for (ModelSnapshot& m : tighter.models) m.config.set_slo_ms(100);
  EXPECT_TRUE(slo_policy.Schedule(tighter).ok());
  ClusterSnapshot other_kind = snapshot_;
  other_kind.devices[1].profile_key = "cpu";
  plan = Policy().Schedule(other_kind);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("is 'cpu'"));
}

TEST_F(InssPolicyTest, FewerDevicesMaskTheHeadsOfTheMissingOnes) {
  // b's head prefers gpu 1, which a one-device cluster lacks: the
  // argmax runs over the devices that exist, so both share gpu 0.
  ClusterSnapshot one = Snapshot(1);
  AddModel(&one, LinearProfile("a", 5, 5), 10, 200);
  AddModel(&one, LinearProfile("b", 5, 5), 10, 200);
  auto plan = Policy().Schedule(one);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->devices_size(), 1);
  EXPECT_EQ(plan->devices(0).gpulets_size(), 2);
  // The state says which devices exist (the second does not).
  const int devices = InssEnvironment::kSlotFeatures * 2;
  EXPECT_FLOAT_EQ(actor_->last_state[devices], 1.f);
  EXPECT_FLOAT_EQ(actor_->last_state[devices + 2], 0.f);
}

TEST_F(InssPolicyTest, TwoFeasibleActionsGiveTwoPlans) {
  // With no more models than devices the actor's choice still decides:
  // spread (one device each, whole) or packed (one device, half each).
  auto packed_actor = std::make_shared<FixedActor>(
      InssInfo({"a", "b"}, 2), std::vector<int>{1, 1}, std::vector<int>{4, 4});
  const InssPolicy packed("inss", PaperRules(), packed_actor, nullptr);
  auto spread_plan = Policy().Schedule(snapshot_);
  auto packed_plan = packed.Schedule(snapshot_);
  ASSERT_TRUE(spread_plan.ok()) << spread_plan.status();
  ASSERT_TRUE(packed_plan.ok()) << packed_plan.status();
  EXPECT_EQ(spread_plan->devices_size(), 2);
  ASSERT_EQ(packed_plan->devices_size(), 1);
  EXPECT_EQ(packed_plan->devices(0).device_id(), "gpu1");
  ASSERT_EQ(packed_plan->devices(0).gpulets_size(), 2);
  EXPECT_EQ(packed_plan->devices(0).gpulets(0).share_percent(), 50);
}

// Heads that prefer gpu1 (60 %) and share level 5 of 10 (50 %), with
// level 10 a close second (40 %): the argmax packs both models on gpu1,
// half each, while draws often spread them at full shares.
class LeaningActor : public InssActor {
 public:
  explicit LeaningActor(InssCheckpointInfo info) : info_(std::move(info)) {}
  const InssCheckpointInfo& info() const override { return info_; }
  absl::StatusOr<std::vector<float>> Probabilities(
      const std::vector<float>& /*state*/) const override {
    const int n = info_.max_models(), k = info_.gpus(), u = info_.share_units();
    std::vector<float> p(n * (k + u), 0.1f / (u - 2));
    for (int i = 0; i < n; ++i) {
      p[i * k + 0] = 0.4f;
      p[i * k + 1] = 0.6f;
      p[n * k + i * u + 4] = 0.5f;
      p[n * k + i * u + u - 1] = 0.4f;
    }
    return p;
  }

 private:
  InssCheckpointInfo info_;
};

TEST_F(InssPolicyTest, SampledActionsKeepTheMostBdaRoom) {
  // Spread at full shares, BDA holds each model's rate about twice as far
  // as packed at half shares: with samples the plan spreads, the same on
  // every call; the argmax alone stays packed.
  auto actor = std::make_shared<LeaningActor>(InssInfo({"a", "b"}, 2));
  PolicyOptions options = PaperRules();
  const InssPolicy argmax("inss", options, actor, nullptr);
  options.rules.mutable_inss()->set_actor_samples(64);
  const InssPolicy sampled("inss", options, actor, nullptr);
  auto packed = argmax.Schedule(snapshot_);
  auto spread = sampled.Schedule(snapshot_);
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_TRUE(spread.ok()) << spread.status();
  EXPECT_EQ(packed->devices_size(), 1) << packed->DebugString();
  ASSERT_EQ(spread->devices_size(), 2) << spread->DebugString();
  for (const DevicePlan& d : spread->devices()) {
    ASSERT_EQ(d.gpulets_size(), 1);
    EXPECT_EQ(d.gpulets(0).share_percent(), 100);
  }
  EXPECT_THAT(spread->reason(), HasSubstr("64 sampled actions"));
  auto again = sampled.Schedule(snapshot_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->SerializeAsString(), spread->SerializeAsString());
}

// The temperature flattens the heads: FixedActor gives every option but
// its argmax 1 %, so its own draws stay near the packed argmax, while
// draws at temperature 100 are nearly uniform and find the spread plan.
TEST_F(InssPolicyTest, ATemperatureAboveOneExploresFurther) {
  auto packed_actor = std::make_shared<FixedActor>(
      InssInfo({"a", "b"}, 2), std::vector<int>{1, 1}, std::vector<int>{4, 4});
  PolicyOptions options = PaperRules();
  options.rules.mutable_inss()->set_actor_samples(64);
  const InssPolicy own("inss", options, packed_actor, nullptr);
  options.rules.mutable_inss()->set_actor_sample_temperature(100);
  const InssPolicy flat("inss", options, packed_actor, nullptr);
  auto near = own.Schedule(snapshot_);
  auto far = flat.Schedule(snapshot_);
  ASSERT_TRUE(near.ok()) << near.status();
  ASSERT_TRUE(far.ok()) << far.status();
  EXPECT_EQ(near->devices_size(), 1) << near->DebugString();
  EXPECT_EQ(far->devices_size(), 2) << far->DebugString();
}

TEST(BdaPlacementPolicyTest, RoundRobinSplitsEachDeviceEvenly) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("a", 5, 5), 10, 200);
  AddModel(&s, LinearProfile("b", 5, 5), 10, 200);
  AddModel(&s, LinearProfile("c", 5, 5), 10, 200);
  auto plan = testing::RunPolicyWith("inss-rr", s, PaperRules());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->policy(), "inss-rr");
  ASSERT_EQ(plan->devices_size(), 2);
  // a and c (name order 0 and 2) on gpu 0 at half each; b alone on gpu 1.
  ASSERT_EQ(plan->devices(0).gpulets_size(), 2);
  EXPECT_EQ(plan->devices(0).gpulets(0).models(0).model(), "a");
  EXPECT_EQ(plan->devices(0).gpulets(1).models(0).model(), "c");
  EXPECT_EQ(plan->devices(0).gpulets(0).share_percent(), 50);
  ASSERT_EQ(plan->devices(1).gpulets_size(), 1);
  EXPECT_EQ(plan->devices(1).gpulets(0).share_percent(), 100);
}

TEST(BdaPlacementPolicyTest, HeadroomIsHowFarBdaCanScaleTheRates) {
  ClusterSnapshot s = Snapshot(1);
  AddModel(&s, LinearProfile("a", 5, 5), 50, 200);
  auto cluster =
      InssCluster::FromSnapshot(s, PaperRules(), InssCluster::CoveringInfo(s));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const InssProvisioning whole{{0}, {100}};
  // 50 req/s fits; the headroom lies between 1 and the cap, and BDA holds
  // the rates scaled by it but not by 5 % more.
  const double h = BdaPlacementPolicy::BdaHeadroom(*cluster, whole, {50}, 64);
  EXPECT_GT(h, 1);
  EXPECT_LT(h, 64);
  EXPECT_TRUE(InssBatching::Decide(*cluster, whole, {50 * h}, {0}, {}).ok);
  EXPECT_FALSE(
      InssBatching::Decide(*cluster, whole, {50 * h * 1.05}, {0}, {}).ok);
  // A rate it cannot batch at all has no headroom.
  EXPECT_EQ(BdaPlacementPolicy::BdaHeadroom(*cluster, whole, {1e6}, 64), 0);
}

TEST(BdaPlacementPolicyTest, RandomBestFindsTheOnlyPlacementThatFits) {
  // Two models that each need a whole device at this rate: only one
  // device each at full share fits, which the best of the random
  // placements must find; a rate no placement fits is refused.
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("a", 5, 5), 120, 200);
  AddModel(&s, LinearProfile("b", 5, 5), 120, 200);
  auto plan = testing::RunPolicyWith("bda-random", s, PaperRules());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->policy(), "bda-random");
  ASSERT_EQ(plan->devices_size(), 2);
  for (const DevicePlan& d : plan->devices()) {
    ASSERT_EQ(d.gpulets_size(), 1);
    EXPECT_EQ(d.gpulets(0).share_percent(), 100);
  }
  s.models[0].rate_rps = 1e6;
  EXPECT_EQ(
      testing::RunPolicyWith("bda-random", s, PaperRules()).status().code(),
      absl::StatusCode::kResourceExhausted);
}

TEST(BdaPlacementPolicyTest, SearchPutsTheHeavyModelAloneAndSplitsTheRest) {
  // a carries most of the load: the search gives it a device of its own
  // and puts b and c together on the other (the exhaustive best,
  // InssPlacementSearchTest); a rate no placement fits is refused.
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("a", 5, 5), 60, 100);
  AddModel(&s, LinearProfile("b", 5, 5), 15, 100);
  AddModel(&s, LinearProfile("c", 5, 5), 10, 100);
  auto plan = testing::RunPolicyWith("bda-search", s, PaperRules());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->policy(), "bda-search");
  ASSERT_EQ(plan->devices_size(), 2);
  std::vector<std::vector<std::string>> together;
  for (const DevicePlan& d : plan->devices()) {
    std::vector<std::string> names;
    for (const GpuletPlan& g : d.gpulets()) {
      for (const ModelAssignment& a : g.models()) names.push_back(a.model());
    }
    std::sort(names.begin(), names.end());
    together.push_back(names);
  }
  std::sort(together.begin(), together.end());
  EXPECT_EQ(together,
            (std::vector<std::vector<std::string>>{{"a"}, {"b", "c"}}));
  s.models[0].rate_rps = 1e6;
  EXPECT_EQ(
      testing::RunPolicyWith("bda-search", s, PaperRules()).status().code(),
      absl::StatusCode::kResourceExhausted);
}

TEST(BdaPlacementPolicyTest, BdaGpuletKeepsGpuletsPlacementAndRebatches) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("a", 5, 5), 50, 200);
  AddModel(&s, LinearProfile("b", 5, 5), 50, 200);
  const PolicyOptions options =
      PaperRules(std::make_shared<ConstantInterference>(1.0));
  auto gpulet = testing::RunPolicyWith("gpulet", s, options);
  auto bda = testing::RunPolicyWith("bda-gpulet", s, options);
  ASSERT_TRUE(gpulet.ok()) << gpulet.status();
  ASSERT_TRUE(bda.ok()) << bda.status();
  EXPECT_EQ(bda->policy(), "bda-gpulet");
  // Same devices and partition sizes per model; batches from BDA
  // (Eq. 2 at 50 req/s: the largest b within 200 ms on the model's share).
  std::map<std::string, std::pair<std::string, double>> where;
  for (const DevicePlan& d : gpulet->devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      for (const ModelAssignment& a : g.models()) {
        where[a.model()] = {d.device_id(), g.share_percent()};
      }
    }
  }
  int models = 0;
  for (const DevicePlan& d : bda->devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      ASSERT_EQ(g.models_size(), 1);
      const ModelAssignment& a = g.models(0);
      EXPECT_EQ(where[a.model()].first, d.device_id()) << a.model();
      EXPECT_EQ(where[a.model()].second, g.share_percent()) << a.model();
      EXPECT_GE(a.batch_size(), 1);
      ++models;
    }
  }
  EXPECT_EQ(models, 2);
}

TEST_F(InssPolicyTest, FallsBackToTheConfiguredPolicy) {
  auto greedy = PolicyRegistry::Create("greedy", PaperRules());
  ASSERT_TRUE(greedy.ok());
  const InssPolicy policy = Policy(std::move(*greedy));
  ClusterSnapshot other = snapshot_;
  AddModel(&other, LinearProfile("z", 5, 5), 10, 200);
  auto plan = policy.Schedule(other);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(actor_->calls, 0);
  EXPECT_THAT(plan->reason(), StartsWith("inss refused (model 'z'"));
  EXPECT_THAT(plan->reason(), HasSubstr("planned by greedy"));
}

}  // namespace
}  // namespace tessera
