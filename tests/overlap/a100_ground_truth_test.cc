#include "overlap/a100_ground_truth.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "gtest/gtest.h"
#include "overlap/torch_checkpoint.h"

namespace tessera {
namespace {

const char kDataDir[] = TESSERA_SHARED_DIR "/data/abacus-a100";

TEST(TorchCheckpointTest, ReadsTheAuthorsStateDict) {
  auto dict = ReadTorchCheckpoint(std::string(kDataDir) + "/A100-2in7.ckpt");
  ASSERT_TRUE(dict.ok()) << dict.status();
  ASSERT_EQ(dict->size(), 8u);
  EXPECT_EQ(dict->at("hidden1.weight").shape, (std::vector<int64_t>{32, 15}));
  EXPECT_EQ(dict->at("hidden1.weight").values.size(), 32u * 15);
  EXPECT_EQ(dict->at("predict.bias").shape, (std::vector<int64_t>{1}));
}

TEST(TorchCheckpointTest, RejectsWhatIsNotACheckpoint) {
  EXPECT_FALSE(ParseTorchCheckpoint("not a zip at all, just text").ok());
  EXPECT_EQ(ReadTorchCheckpoint("/nonexistent.ckpt").status().code(),
            absl::StatusCode::kNotFound);
}

// The sanity values of the data's README (batch 4).
TEST(A100GroundTruthTest, MatchesTheDataReadmeSanityValues) {
  auto truth = A100GroundTruth::Create(kDataDir, 2);
  ASSERT_TRUE(truth.ok()) << truth.status();
  EXPECT_NEAR((*truth)->MeanMs({{0, 0, 18, 4, 0}, {1, 0, 35, 4, 0}}), 17.0,
              0.1);
  EXPECT_NEAR((*truth)->MeanMs({{0, 0, 18, 4, 0}, {1, 0, 1, 4, 0}}), 9.0, 0.1);
  EXPECT_NEAR((*truth)->MeanMs({{2, 0, 52, 4, 0}, {5, 0, 22, 4, 0}}), 24.5,
              0.1);
  // Member order does not matter: the encoding sorts by service id.
  EXPECT_DOUBLE_EQ((*truth)->MeanMs({{5, 0, 22, 4, 0}, {2, 0, 52, 4, 0}}),
                   (*truth)->MeanMs({{2, 0, 52, 4, 0}, {5, 0, 22, 4, 0}}));
}

TEST(A100GroundTruthTest, AQueryAloneIsAnExtrapolationBesideAnEmptyRange) {
  auto truth = A100GroundTruth::Create(kDataDir, 2);
  ASSERT_TRUE(truth.ok());
  bool extrapolated = false;
  const double alone = (*truth)->MeanMs({{1, 0, 35, 4, 0}}, &extrapolated);
  EXPECT_TRUE(extrapolated);
  EXPECT_DOUBLE_EQ(alone,
                   (*truth)->MeanMs({{1, 0, 35, 4, 0}, {0, 0, 0, 4, 0}}));
  (*truth)->MeanMs({{1, 0, 35, 4, 0}, {0, 0, 18, 4, 0}}, &extrapolated);
  EXPECT_FALSE(extrapolated);
}

TEST(A100GroundTruthTest, LargerGroupsOnlyWithinTheQuadrupletServices) {
  auto truth = A100GroundTruth::Create(kDataDir, 4);
  ASSERT_TRUE(truth.ok()) << truth.status();
  EXPECT_TRUE((*truth)->Covers({1, 2, 5, 6}));
  EXPECT_TRUE((*truth)->Covers({0, 3}));
  EXPECT_FALSE((*truth)->Covers({0, 1, 2}));
  const double quad = (*truth)->MeanMs({{1, 0, 35, 4, 0},
                                        {2, 0, 52, 4, 0},
                                        {5, 0, 22, 4, 0},
                                        {6, 0, 12, 4, 32}});
  // Between the longest member alone and all four one after another.
  double longest = 0, sequential = 0;
  for (const GroupMember& m : OperatorGroup{{1, 0, 35, 4, 0},
                                            {2, 0, 52, 4, 0},
                                            {5, 0, 22, 4, 0},
                                            {6, 0, 12, 4, 32}}) {
    const double alone = (*truth)->MeanMs({m});
    longest = std::max(longest, alone);
    sequential += alone;
  }
  EXPECT_GT(quad, 0.9 * longest);
  EXPECT_LT(quad, sequential);
  EXPECT_FALSE(A100GroundTruth::Create(kDataDir, 5).ok());
}

TEST(A100GroundTruthTest, RunsSpreadAsThePaperMeasured) {
  auto truth = A100GroundTruth::Create(kDataDir, 2);
  ASSERT_TRUE(truth.ok());
  const OperatorGroup g = {{0, 0, 18, 4, 0}, {1, 0, 35, 4, 0}};
  const double mean = (*truth)->MeanMs(g);
  std::mt19937_64 rng(7);
  double sum = 0, sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const double x = (*truth)->SampleMs(g, rng);
    sum += x;
    sq += x * x;
  }
  const double m = sum / n;
  const double sd = std::sqrt(sq / n - m * m);
  EXPECT_NEAR(m / mean, 1.0, 0.003);
  EXPECT_NEAR(sd / mean, A100GroundTruth::kNoiseFraction, 0.002);
}

}  // namespace
}  // namespace tessera
