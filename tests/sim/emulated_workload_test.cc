#include "sim/emulated_workload.h"

#include "gtest/gtest.h"
#include "scheduler/policy_registry.h"
#include "sim/cluster_simulator.h"

namespace tessera {
namespace {

const std::string kRoot = TESSERA_SOURCE_DIR;

TEST(EmulatedWorkloadTest, ShippedSetupLoadsAndItsTruthUsesTheLinearModel) {
  auto setup = LoadEmulatedSetup(kRoot + "/configs/emulated/models",
                                 kRoot + "/profiles", 0);
  ASSERT_TRUE(setup.ok()) << setup.status();
  EXPECT_EQ((*setup)->interference->name(), "gpulet-linear");
  const LatencyModel* vgg = (*setup)->truth->model("vgg16");
  const LatencyModel* lenet = (*setup)->truth->model("lenet");
  ASSERT_NE(vgg, nullptr);
  ASSERT_NE(lenet, nullptr);
  // The ground truth's slowdown is the interference model's, with the
  // neighbour on the rest of the GPU.
  const std::string other = "vgg16";
  EXPECT_DOUBLE_EQ((*setup)->truth->Factor("vgg16", 16, 50, other, 16),
                   std::max(1.0, (*setup)->interference->Factor(
                                     {vgg, 16, 50}, {vgg, 16, 50})));
  EXPECT_GT((*setup)->truth->Factor("vgg16", 16, 50, other, 16), 1.1);
  // A light neighbour hurts less than a heavy one.
  const std::string light = "lenet";
  EXPECT_LT((*setup)->truth->Factor("vgg16", 16, 50, light, 1),
            (*setup)->truth->Factor("vgg16", 16, 50, other, 16));
}

TEST(EmulatedWorkloadTest, GpuletPlansAndTheSimulatorServesTheShippedSet) {
  auto setup = LoadEmulatedSetup(kRoot + "/configs/emulated/models",
                                 kRoot + "/profiles", 0);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const ClusterSnapshot snapshot = MakeEmulatedSnapshot(
      **setup, 4, {{"resnet50", 200}, {"vgg16", 80}, {"lenet", 500}});
  ASSERT_EQ(snapshot.models.size(), 3u);
  PolicyOptions po;
  po.interference = (*setup)->interference;
  auto policy = PolicyRegistry::Create("gpulet", po);
  ASSERT_TRUE(policy.ok());
  auto plan = (*policy)->Schedule(snapshot);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ClusterSimulator sim((*setup)->truth.get(), Configs(snapshot));
  SimOptions options;
  options.duration = absl::Seconds(10);
  const SimResult r = sim.Run(
      *plan, {{"resnet50", 200}, {"vgg16", 80}, {"lenet", 500}}, options);
  EXPECT_GT(r.arrived, 5000);
  EXPECT_LT(r.violation_fraction(), 0.01);
}

}  // namespace
}  // namespace tessera
