// Checks on iGniter's public V100 measurements, read from ../shared/data at
// run time (never copied into the repository). Skipped, saying so, where
// the data is absent.
#include <algorithm>
#include <filesystem>
#include <random>

#include "datasets/igniter_v100_data.h"
#include "gtest/gtest.h"
#include "perfmodel/interference_evaluation.h"
#include "perfmodel/interference_model.h"

namespace tessera {
namespace {

const char kPath[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";

double P90RelativeError(const InterferenceModel& model,
                        const std::vector<CoLocationSample>& test) {
  std::vector<double> e;
  for (const auto& s : test) {
    e.push_back(std::fabs(model.LatencyMs(s.self, {s.other}) - s.latency_ms) /
                s.latency_ms);
  }
  std::sort(e.begin(), e.end());
  return e[static_cast<size_t>(0.9 * e.size())];
}

TEST(IgniterV100RealDataTest, LoadsAndInterferenceModelsBeatNoModel) {
  if (!std::filesystem::exists(kPath)) {
    GTEST_SKIP() << kPath << " not present";
  }
  auto data = LoadIgniterV100(kPath, Share100Rule::kBatch1Ratio);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->profiles.size(), 4u);
  EXPECT_EQ(data->colocation.size(), 750u);
  auto models = BuildLatencyModels(data->profiles);
  ASSERT_TRUE(models.ok()) << models.status();
  for (const auto& [name, m] : *models) {
    EXPECT_EQ(m.max_batch(), 32) << name;
    // Monotone after the envelope: more share is never slower.
    EXPECT_LE(m.LatencyMs(8, 100), m.LatencyMs(8, 20)) << name;
  }
  const auto samples = ToSamples(data->colocation, *models);
  ASSERT_EQ(samples.size(), 1500u);
  // Random 70/30 split by row.
  std::vector<CoLocationSample> train, test;
  SplitRowPairs(samples, 1, 0.7, &train, &test);
  const double none = P90RelativeError(NoInterference(), test);
  const double linear = P90RelativeError(*LinearInterference::Fit(train), test);
  const double pairwise =
      P90RelativeError(*PairwiseInterference::Fit(train), test);
  std::cout << "[ info ] held-out p90 error: none " << 100 * none
            << "%, gpulet-linear " << 100 * linear << "%, pairwise "
            << 100 * pairwise << "%\n";
  // The gpulet paper reports 10.26 % at p90 for its linear model.
  EXPECT_LT(linear, 0.1026);
  EXPECT_LT(linear, none);
  EXPECT_LT(pairwise, linear);
  // The aim: below 4 % at p90 on held-out rows.
  EXPECT_LT(pairwise, 0.04);
}

}  // namespace
}  // namespace tessera
