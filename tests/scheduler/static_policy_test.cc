#include "scheduler/static_policy.h"

#include "common/text_proto.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

ClusterSnapshot TwoModelSnapshot() {
  ClusterSnapshot s;
  s.devices.push_back({"b0", "cpu0", DEVICE_KIND_CPU, 2, 0});
  for (const char* name : {"m1", "m2"}) {
    ModelSnapshot m;
    m.config.set_name(name);
    m.config.set_max_batch_size(8);
    s.models.push_back(m);
  }
  return s;
}

Plan ParsePlan(const std::string& text) {
  Plan plan;
  EXPECT_TRUE(ParseTextProto(text, &plan).ok());
  return plan;
}

absl::StatusOr<Plan> SchedulePlan(const std::string& plan_text,
                                  const ClusterSnapshot& snapshot) {
  PolicyOptions options;
  options.static_plan = ParsePlan(plan_text);
  auto policy = PolicyRegistry::Create("static", options);
  EXPECT_TRUE(policy.ok()) << policy.status();
  return (*policy)->Schedule(snapshot);
}

constexpr char kGood[] = R"pb(
  devices {
    backend_id: "b0"
    device_id: "cpu0"
    gpulets {
      gpulet_id: "g0"
      share_percent: 50
      models { model: "m1" batch_size: 4 }
    }
    gpulets {
      gpulet_id: "g1"
      share_percent: 50
      models { model: "m2" batch_size: 8 }
    }
  })pb";

TEST(StaticPolicyTest, ReturnsConfiguredPlan) {
  auto plan = SchedulePlan(kGood, TwoModelSnapshot());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->devices(0).gpulets_size(), 2);
  EXPECT_EQ(plan->policy(), "static");
}

TEST(StaticPolicyTest, UnknownDeviceIsRejected) {
  ClusterSnapshot s = TwoModelSnapshot();
  s.devices[0].device_id = "cpu9";
  auto plan = SchedulePlan(kGood, s);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(), HasSubstr("cpu0"));
}

TEST(StaticPolicyTest, UnservedModelIsNamed) {
  ClusterSnapshot s = TwoModelSnapshot();
  ModelSnapshot m3;
  m3.config.set_name("m3");
  m3.config.set_max_batch_size(1);
  s.models.push_back(m3);
  auto plan = SchedulePlan(kGood, s);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(plan.status().message(), HasSubstr("'m3'"));
}

TEST(StaticPolicyTest, OversubscribedDeviceIsRejected) {
  auto plan = SchedulePlan(R"pb(
                             devices {
                               backend_id: "b0"
                               device_id: "cpu0"
                               gpulets {
                                 gpulet_id: "g0"
                                 share_percent: 60
                                 models { model: "m1" batch_size: 1 }
                               }
                               gpulets {
                                 gpulet_id: "g1"
                                 share_percent: 60
                                 models { model: "m2" batch_size: 1 }
                               }
                             })pb",
                           TwoModelSnapshot());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("120"));
}

TEST(StaticPolicyTest, BatchAboveModelMaxIsRejected) {
  auto plan = SchedulePlan(R"pb(
                             devices {
                               backend_id: "b0"
                               device_id: "cpu0"
                               gpulets {
                                 gpulet_id: "g0"
                                 share_percent: 100
                                 models { model: "m1" batch_size: 9 }
                                 models { model: "m2" batch_size: 1 }
                               }
                             })pb",
                           TwoModelSnapshot());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
}

// m2 unloaded through the repository API: the snapshot lacks it, so its
// gpulet (g1 serves only m2) is left out and m1's is kept as configured.
TEST(StaticPolicyTest, ModelMissingFromTheSnapshotIsLeftOutWithItsGpulet) {
  ClusterSnapshot s = TwoModelSnapshot();
  s.models.pop_back();
  auto plan = SchedulePlan(kGood, s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->devices_size(), 1);
  ASSERT_EQ(plan->devices(0).gpulets_size(), 1);
  EXPECT_EQ(plan->devices(0).gpulets(0).gpulet_id(), "g0");
  EXPECT_EQ(plan->devices(0).gpulets(0).models(0).model(), "m1");
  EXPECT_EQ(plan->devices(0).gpulets(0).share_percent(), 50);
}

TEST(StaticPolicyTest, ModelsOutsideTheRepositoryAreNamedAtStart) {
  EXPECT_TRUE(
      StaticPolicy::CheckStaticPlanModels(ParsePlan(kGood), {"m1", "m2"}).ok());
  const absl::Status s =
      StaticPolicy::CheckStaticPlanModels(ParsePlan(kGood), {"m1"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'m2'"));
  EXPECT_THAT(s.message(), HasSubstr("'g1'"));
}

TEST(StaticPolicyTest, RepositoryModelsOutsideThePlanAreNamedAtStart) {
  EXPECT_TRUE(
      StaticPolicy::CheckStaticPlanServes(ParsePlan(kGood), {"m1", "m2"}).ok());
  const absl::Status s =
      StaticPolicy::CheckStaticPlanServes(ParsePlan(kGood), {"m1", "m3"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'m3'"));
}

TEST(PolicyRegistryTest, UnknownNameListsKnownPolicies) {
  auto policy = PolicyRegistry::Create("nope", PolicyOptions());
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(policy.status().message(), HasSubstr("static"));
}

}  // namespace
}  // namespace tessera
