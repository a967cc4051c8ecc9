// The gpulet reproduction's smoke test on iGniter's V100 measurements
// (../shared/data, read at run time): a 2-model, 2-GPU grid, checked for
// its shape and for numbers known from the data and the definitions.
#include "sim/gpulet_reproduction.h"

#include <filesystem>

#include "gtest/gtest.h"

namespace tessera {
namespace {

const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";

TEST(GpuletReproductionTest, SmallGridHasTheTablesShapeAndKnownNumbers) {
  auto setup = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
  ASSERT_TRUE(setup.ok()) << setup.status();
  GpuletReproduction::Options options;
  options.gpus = 2;
  options.models = {"alexnet", "resnet50"};
  options.levels = 3;  // 3^2 - 1 = 8 scenarios
  options.policies = {"sbp", "gpulet", "ideal-layout"};
  options.bisection_steps = 4;
  const GpuletReproduction reproduction(setup->get(), options);
  // u = 0.5 x 32 000 / L(32, 100 %) per model; the paper's SLO 2 L(32).
  const std::vector<double> units = reproduction.Units();
  ASSERT_EQ(units.size(), 2u);
  const LatencyModel* alexnet = (*setup)->truth->model("alexnet");
  EXPECT_NEAR(units[0], 0.5 * 32000 / alexnet->LatencyMs(32, 100), 1e-9);
  const ClusterSnapshot snap = reproduction.Snapshot({units[0], 0}, 2);
  ASSERT_EQ(snap.models.size(), 1u);
  EXPECT_NEAR(snap.models[0].rate_rps, 2 * units[0], 1e-9);
  EXPECT_NEAR(snap.models[0].config.slo_ms(), 2 * alexnet->LatencyMs(32, 100),
              1e-9);

  PolicyOptions base;
  base.interference = (*setup)->linear;
  base.rules = PresetRules(RULES_PRESET_PAPER);
  auto result = reproduction.Run(base);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->scenarios.size(), 8u);
  ASSERT_EQ(result->policies.size(), 3u);
  for (const auto& s : result->scenarios) {
    ASSERT_EQ(s.schedulable.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      // Planned at the scenario's rates <=> a max scale of at least 1.
      EXPECT_EQ(s.schedulable[k], s.max_scale[k] >= 1) << k;
    }
  }
  const auto& ideal = result->policies[2];
  EXPECT_EQ(ideal.policy, "ideal-layout");
  EXPECT_DOUBLE_EQ(ideal.mean_scale_fraction, 1.0);  // against itself
  EXPECT_GT(result->policies[1].mean_scale_fraction, 0);
  const auto claims = GpuletReproduction::Verdicts(*result);
  ASSERT_EQ(claims.size(), 3u);
  for (const auto& c : claims) {
    EXPECT_TRUE(c.verdict == "holds" || c.verdict == "holds in direction" ||
                c.verdict == "does not hold")
        << c.verdict;
  }
  // Simulated: a plan that holds was planned; every plan of this light
  // grid (at most 2 x u per model on 2 GPUs) holds under gpulet's.
  options.simulate = true;
  options.sim.duration = absl::Seconds(3);
  options.sim.warmup = absl::Seconds(1);
  base.rules = PresetRules(RULES_PRESET_TESSERA);
  auto simulated = GpuletReproduction(setup->get(), options).Run(base);
  ASSERT_TRUE(simulated.ok()) << simulated.status();
  for (const auto& p : simulated->policies) {
    EXPECT_LE(p.held, p.schedulable) << p.policy;
  }
  EXPECT_EQ(simulated->policies[1].held, simulated->policies[1].schedulable);
  // Without ideal-layout there is nothing to compare with.
  options.policies = {"sbp", "gpulet"};
  EXPECT_EQ(GpuletReproduction(setup->get(), options).Run(base).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GpuletReproductionVerdictsTest, ThroughputGainsByHand) {
  // Columns: sbp, greedy, gpulet-noint, gpulet.
  GpuletReproduction::ThroughputResult r;
  r.workloads = {"a", "b"};
  r.max_rps = {{100, 50, 200, 150}, {100, 100, 100, 100}};
  const auto claims = GpuletReproduction::ThroughputVerdicts(r);
  ASSERT_EQ(claims.size(), 3u);
  // Over sbp: (0.5 + 0) / 2 = +25 %: ahead on a, tied on b, short of
  // +61.7 %.
  EXPECT_EQ(claims[0].ours, "+25.0 % (ahead on 1 of 2 workloads, tied on 1)");
  EXPECT_EQ(claims[0].verdict, "holds in direction");
  // Over greedy: (2 + 0) / 2 = +100 % >= 0.95 x 81.2 %.
  EXPECT_EQ(claims[1].verdict, "holds");
  // Over gpulet-noint: (-0.25 + 0) / 2 = -12.5 %.
  EXPECT_EQ(claims[2].ours, "-12.5 % (ahead on 0 of 2 workloads, tied on 1)");
  EXPECT_EQ(claims[2].verdict, "does not hold");
}

// The game and traffic apps of the gpulet artifact (../shared/data/glet/
// apps) on the emulated set: read at run time, mapped onto the set's
// models (lenet1..6 -> replicas of lenet, ssd-mobilenetv1 ->
// ssd_mobilenet), and searched on short runs.
TEST(GpuletReproductionTest, AppsLoadOntoTheEmulatedSetAndGetAVerdict) {
  const std::string apps = TESSERA_SHARED_DIR "/data/glet/apps";
  if (!std::filesystem::exists(apps + "/game.json")) {
    GTEST_SKIP() << apps << " absent";
  }
  auto setup = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const std::string root = TESSERA_SOURCE_DIR;
  auto emulated = LoadEmulatedSetup(root + "/configs/emulated/models",
                                    root + "/profiles", 0);
  ASSERT_TRUE(emulated.ok()) << emulated.status();
  GpuletReproduction::Options options;
  options.sim.duration = absl::Seconds(3);
  options.sim.warmup = absl::Seconds(1);
  const GpuletReproduction reproduction(setup->get(), options);
  PolicyOptions base;
  base.interference = (*emulated)->interference;
  base.rules = PresetRules(RULES_PRESET_TESSERA);
  auto result = reproduction.RunApps(**emulated, apps, base);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->apps.size(), 2u);
  EXPECT_EQ(result->apps[0], "game");
  for (const auto& row : result->max_app_rps) {
    ASSERT_EQ(row.size(), GpuletReproduction::ThroughputPolicies().size());
    for (double v : row) EXPECT_GT(v, 0);  // every policy serves some of it
  }
  EXPECT_EQ(GpuletReproduction::AppsVerdicts(*result).size(), 2u);
  // The schedulability sweep on the emulated set, with the configured
  // (the apps') SLOs.
  GpuletReproduction::Options sweep;
  sweep.emulated = emulated->get();
  sweep.models = {"googlenet", "resnet50"};
  sweep.levels = 2;  // 2^2 - 1 = 3 scenarios
  sweep.policies = {"sbp", "gpulet", "ideal-layout"};
  sweep.bisection_steps = 3;
  const GpuletReproduction on_emulated(setup->get(), sweep);
  const ClusterSnapshot snap = on_emulated.Snapshot({10, 0}, 1);
  ASSERT_EQ(snap.models.size(), 1u);
  EXPECT_EQ(snap.models[0].config.slo_ms(), 66);  // configs/emulated
  EXPECT_EQ(snap.devices[0].profile_key, "emulated");
  auto swept = on_emulated.Run(base);
  ASSERT_TRUE(swept.ok()) << swept.status();
  ASSERT_EQ(swept->scenarios.size(), 3u);
  EXPECT_DOUBLE_EQ(swept->policies[2].mean_scale_fraction, 1.0);
  // A missing app directory is a clear error.
  EXPECT_EQ(
      reproduction.RunApps(**emulated, "/nonexistent", base).status().code(),
      absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera
