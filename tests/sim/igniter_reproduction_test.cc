// The iGniter reproduction's smoke test on iGniter's V100 measurements
// (../shared/data, read at run time): the table's shape, the paper's
// workload set, and the GPUs iGniter and FFD+ provision under the paper's
// rules (numbers known from the data: 6 and 5, as in the paper's Fig. 14).
#include "sim/igniter_reproduction.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace tessera {
namespace {

const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";

TEST(IgniterReproductionTest, PaperRulesProvisionSixGpusAndFfdFive) {
  auto setup = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
  ASSERT_TRUE(setup.ok()) << setup.status();
  IgniterReproduction::Options options;
  options.policies = {"igniter", "igniter-ffd", "gpulet"};
  options.sim.duration = absl::Seconds(4);
  options.sim.warmup = absl::Seconds(1);
  const IgniterReproduction reproduction(setup->get(), options);
  const auto& w = IgniterReproduction::PaperWorkloads();
  ASSERT_EQ(w.size(), 12u);
  EXPECT_EQ(w[0].model, "alexnet");
  EXPECT_DOUBLE_EQ(w[0].slo_ms, 10);
  EXPECT_DOUBLE_EQ(w[0].rate_rps, 1200);
  EXPECT_TRUE(w[11].assumed);
  const ClusterSnapshot snap = reproduction.Snapshot(w);
  ASSERT_EQ(snap.models.size(), 12u);
  EXPECT_EQ(snap.models[9].config.name(), "ssd/W10");
  EXPECT_DOUBLE_EQ(snap.models[9].config.slo_ms(), 25);

  PolicyOptions base;
  base.interference = (*setup)->linear;
  base.rules = PresetRules(RULES_PRESET_PAPER);
  auto result = reproduction.Run(base);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->fig14.size(), 3u);
  ASSERT_EQ(result->table1.size(), 3u);
  EXPECT_TRUE(result->no_queueing_check.empty());  // off in the paper rules
  const auto& igniter = result->fig14[0];
  const auto& ffd = result->fig14[1];
  ASSERT_TRUE(igniter.planned) << igniter.refusal;
  ASSERT_TRUE(ffd.planned) << ffd.refusal;
  EXPECT_EQ(igniter.gpus, 6);
  EXPECT_EQ(ffd.gpus, 5);
  // FFD+ keeps r_lower: never more share in all than iGniter's ALLOC.
  EXPECT_LT(ffd.share_sum, igniter.share_sum);
  // Table 1 on one GPU.
  EXPECT_EQ(result->table1[0].gpus, 1);
  const auto claims = IgniterReproduction::Verdicts(*result);
  ASSERT_EQ(claims.size(), 4u);
  for (const auto& c : claims) {
    EXPECT_TRUE(c.verdict == "holds" || c.verdict == "holds in direction" ||
                c.verdict == "does not hold")
        << c.verdict;
  }
  std::string csv;
  IgniterReproduction::AppendCsv(*result, "paper", &csv);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 6);
}

}  // namespace
}  // namespace tessera
