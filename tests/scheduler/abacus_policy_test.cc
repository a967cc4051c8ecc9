#include "scheduler/abacus_policy.h"

#include "gtest/gtest.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

ClusterSnapshot Snapshot(int models, int devices) {
  ClusterSnapshot s;
  for (int d = 0; d < devices; ++d) {
    DeviceSnapshot device;
    device.backend_id = "b0";
    device.device_id = "gpu" + std::to_string(d);
    device.kind = DEVICE_KIND_EMULATED;
    s.devices.push_back(device);
  }
  for (int m = 0; m < models; ++m) {
    ModelSnapshot model;
    model.config.set_name("m" + std::to_string(m));
    model.config.set_max_batch_size(4);
    model.config.set_segment_count(10);
    model.rate_rps = 5;
    s.models.push_back(model);
  }
  return s;
}

std::vector<int> ModelsPerDevice(const Plan& plan) {
  std::vector<int> counts;
  for (const DevicePlan& d : plan.devices()) {
    EXPECT_EQ(d.gpulets_size(), 1);
    EXPECT_EQ(d.gpulets(0).share_percent(), 100);
    counts.push_back(d.gpulets(0).models_size());
  }
  return counts;
}

TEST(AbacusPolicyTest, PairsWhileThereAreDevicesElseUpToFour) {
  AbacusPolicy policy("abacus", GPULET_SCHEDULER_ABACUS);
  auto pairs = policy.Schedule(Snapshot(7, 4));
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  EXPECT_EQ(ModelsPerDevice(*pairs), (std::vector<int>{2, 2, 2, 1}));
  EXPECT_EQ(pairs->devices(0).gpulets(0).scheduler(), GPULET_SCHEDULER_ABACUS);
  auto packed = policy.Schedule(Snapshot(7, 2));
  ASSERT_TRUE(packed.ok());
  EXPECT_EQ(ModelsPerDevice(*packed), (std::vector<int>{4, 3}));
  EXPECT_EQ(policy.Schedule(Snapshot(9, 2)).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(AbacusPolicyTest, RefusesModelsThatCannotRunByRange) {
  ClusterSnapshot s = Snapshot(2, 1);
  s.models[1].config.set_segment_count(0);
  AbacusPolicy policy("abacus", GPULET_SCHEDULER_ABACUS);
  EXPECT_EQ(policy.Schedule(s).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(AbacusPolicyTest, TheBaselinesAreRegisteredWithTheirScheduler) {
  for (const auto& [name, scheduler] :
       std::vector<std::pair<std::string, GpuletScheduler>>{
           {"abacus", GPULET_SCHEDULER_ABACUS},
           {"abacus-fcfs", GPULET_SCHEDULER_FCFS},
           {"abacus-sjf", GPULET_SCHEDULER_SJF},
           {"abacus-edf", GPULET_SCHEDULER_EDF}}) {
    auto policy = PolicyRegistry::Create(name, PolicyOptions{});
    ASSERT_TRUE(policy.ok()) << name;
    auto plan = (*policy)->Schedule(Snapshot(2, 1));
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->devices(0).gpulets(0).scheduler(), scheduler) << name;
    EXPECT_EQ(plan->policy(), name);
  }
}

}  // namespace
}  // namespace tessera
