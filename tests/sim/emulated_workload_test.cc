#include "sim/emulated_workload.h"

#include <map>
#include <string>
#include <vector>

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

TEST(EmulatedWorkloadTest, LasPlansTheShippedSetAtALightLoad) {
  // At 1/64 of the mix below, googlenet's and ssd_mobilenet's best (b, p)
  // beside each other alternate round after round (each one's choice
  // changes the other's interference); the round that ends with googlenet
  // at its SLO exactly and ssd_mobilenet grown breaks googlenet's check.
  // las returns the feasible state of that cycle, and it holds.
  auto setup = LoadEmulatedSetup(kRoot + "/configs/emulated/models",
                                 kRoot + "/profiles", 0);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const std::map<std::string, double> rates = {{"lenet", 30.0 / 64},
                                               {"googlenet", 5.0 / 64},
                                               {"resnet50", 7.5 / 64},
                                               {"vgg16", 3.0 / 64},
                                               {"ssd_mobilenet", 3.0 / 64}};
  std::vector<WorkloadModel> models;
  for (const auto& [name, rate] : rates) models.push_back({name, rate});
  const ClusterSnapshot snapshot = MakeEmulatedSnapshot(**setup, 4, models);
  PolicyOptions po;
  po.interference = (*setup)->interference;
  auto policy = PolicyRegistry::Create("las", po);
  ASSERT_TRUE(policy.ok());
  auto plan = (*policy)->Schedule(snapshot);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int assignments = 0;
  for (const DevicePlan& d : plan->devices()) {
    double used = 0;
    for (const GpuletPlan& g : d.gpulets()) {
      used += g.share_percent();
      assignments += g.models_size();
    }
    EXPECT_LE(used, 100 + 1e-9);
  }
  EXPECT_EQ(assignments, 5);
  // The ground truth holds it (MEASURES.md: at most 1 % late).
  ClusterSimulator sim((*setup)->truth.get(), Configs(snapshot));
  SimOptions options;
  options.duration = absl::Seconds(2000);
  const SimResult r = sim.Run(*plan, rates, options);
  EXPECT_GT(r.arrived, 1000);
  EXPECT_LT(r.violation_fraction(), 0.01);
}

}  // namespace
}  // namespace tessera
