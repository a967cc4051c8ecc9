// The LAS reproduction's smoke test: the paper's scaling formulas on both
// settings (the shipped CPU profiles and iGniter's V100 measurements, read
// at run time), and the known outcome on the 2-core CPU device: las plans
// nothing there (three services, two partitions).
#include "sim/las_reproduction.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";
const std::string kRoot = TESSERA_SOURCE_DIR;

TEST(LasReproductionTest, ScalesThePapersSettingAndFindsTwoPartitionsTooFew) {
  auto v100 = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
  ASSERT_TRUE(v100.ok()) << v100.status();
  auto cpu =
      LoadEmulatedSetup(kRoot + "/models", kRoot + "/profiles", 0, "cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto cpu_setting = LasReproduction::CpuSetting(**cpu);
  ASSERT_TRUE(cpu_setting.ok()) << cpu_setting.status();
  auto v100_setting = LasReproduction::V100Setting(**v100);
  ASSERT_TRUE(v100_setting.ok()) << v100_setting.status();

  LasReproduction::Options options;
  options.policies = {"las", "sbp"};
  options.scales = {1};  // the grid's centre only
  options.sim.duration = absl::Seconds(4);
  options.sim.warmup = absl::Seconds(1);
  const LasReproduction reproduction(options);
  PolicyOptions base;
  base.rules = PresetRules(RULES_PRESET_PAPER);
  auto result = reproduction.Run({*cpu_setting, *v100_setting}, base);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->settings.size(), 2u);
  for (size_t s = 0; s < 2; ++s) {
    const auto& setting = s == 0 ? *cpu_setting : *v100_setting;
    ASSERT_EQ(result->settings[s].cells.size(), 1u);
    const auto& c = result->settings[s].cells[0];
    // SLO'_i = SLO_i x L'_i(1, 100 %) / t_i; rates by the ResNet's speed.
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(c.slos_ms[i],
                  LasReproduction::PaperSlos()[i] * setting.solo_ms[i] /
                      options.paper_solo_ms[i],
                  1e-9);
      EXPECT_NEAR(c.rates_rps[i],
                  LasReproduction::PaperRates()[i] * options.paper_solo_ms[0] /
                      setting.solo_ms[0],
                  1e-9);
    }
    ASSERT_EQ(c.max_rps.size(), 2u);
  }
  // resnet18 L(1, 100 %) = 18.924 ms in profiles/cpu: SLO 50 x 18.924 / 5.
  EXPECT_NEAR(result->settings[0].cells[0].slos_ms[0], 189.24, 1e-6);
  // Three services need three partitions; a 2-core device makes two.
  EXPECT_EQ(result->settings[0].cells[0].max_rps[0], 0);
  EXPECT_NE(result->settings[0].cells[0].refusal[0], "");
  // The V100 is partitioned at 10 %: both plan something.
  EXPECT_GT(result->settings[1].cells[0].max_rps[0], 0);
  EXPECT_GT(result->settings[1].cells[0].max_rps[1], 0);
  EXPECT_EQ(reproduction.Verdicts(*result).size(), 4u);
}

}  // namespace
}  // namespace tessera
