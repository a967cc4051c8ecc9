// The shipped models' segments (models/<m>/1/segments.pt) run by range with
// real LibTorch: ranges compose to the whole served model, and groups of
// ranges run concurrently on the cores.
#include <cmath>

#include <torch/cuda.h>

#include "gtest/gtest.h"
#include "proxy/torch_group_executor.h"

namespace tessera {
namespace {

const std::vector<std::string> kModels = {"lenet", "resnet18",
                                          "mobilenet_v3_small", "bert_tiny"};

void ExpectClose(const std::vector<std::vector<float>>& got,
                 const std::vector<std::vector<float>>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t t = 0; t < got.size(); ++t) {
    ASSERT_EQ(got[t].size(), want[t].size()) << what;
    for (size_t i = 0; i < got[t].size(); ++i) {
      ASSERT_NEAR(got[t][i], want[t][i], 1e-5 + 1e-4 * std::abs(want[t][i]))
          << what << " output " << t << " element " << i;
    }
  }
}

TEST(SegmentedModelTest, RangesComposeToTheWholeModel) {
  auto executor = TorchGroupExecutor::Create(TESSERA_MODEL_DIR, kModels, 2, 1);
  ASSERT_TRUE(executor.ok()) << executor.status();
  const ServiceCatalog& catalog = (*executor)->catalog();
  for (int s = 0; s < catalog.size(); ++s) {
    const int n = catalog.service(s).operators;
    auto whole = (*executor)->RunWholeModel(s);
    ASSERT_TRUE(whole.ok()) << whole.status();
    for (const std::vector<int>& cuts :
         std::vector<std::vector<int>>{{}, {1}, {n / 2}, {1, n - 1}}) {
      auto pieces = (*executor)->RunInPieces(s, cuts);
      ASSERT_TRUE(pieces.ok()) << pieces.status();
      ExpectClose(*pieces, *whole,
                  catalog.service(s).name + " cut at " +
                      std::to_string(cuts.empty() ? 0 : cuts[0]));
    }
  }
}

TEST(SegmentedModelTest, AGroupRunsItsRangesAndTakesTime) {
  auto executor = TorchGroupExecutor::Create(
      TESSERA_MODEL_DIR, {"resnet18", "mobilenet_v3_small"}, 1, 1);
  ASSERT_TRUE(executor.ok()) << executor.status();
  auto pair = (*executor)->RunMs({{0, 0, 10, 1, 0}, {1, 0, 14, 1, 0}});
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_GT(*pair, 0);
  // A query continued from the middle: its prefix runs untimed first.
  auto tail = (*executor)->RunMs({{0, 5, 10, 1, 0}});
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_GT(*tail, 0);
  EXPECT_FALSE((*executor)->RunMs({{0, 0, 11, 1, 0}}).ok());
  EXPECT_FALSE(
      TorchGroupExecutor::Create(TESSERA_MODEL_DIR, {"nonexistent"}, 1, 1)
          .ok());
}

// On cuda:0 each member runs on a stream of its own; where this LibTorch
// has no CUDA (Debian's), asking for it is a clear error.
TEST(SegmentedModelTest, OnCudaAGroupRunsOrTheErrorSaysWhy) {
  auto executor = TorchGroupExecutor::Create(
      TESSERA_MODEL_DIR, {"lenet", "bert_tiny"}, 2, 1, /*cuda=*/true);
  if (!torch::cuda::is_available()) {
    EXPECT_EQ(executor.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(executor.status().message().find("no CUDA or sees no GPU"),
              std::string::npos)
        << executor.status();
    return;
  }
  ASSERT_TRUE(executor.ok()) << executor.status();
  auto pair = (*executor)->RunMs({{0, 0, 4, 2, 0}, {1, 0, 4, 2, 0}});
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_GT(*pair, 0);
  for (int s = 0; s < 2; ++s) {
    auto whole = (*executor)->RunWholeModel(s);
    auto pieces = (*executor)->RunInPieces(s, {2});
    ASSERT_TRUE(whole.ok() && pieces.ok());
    ExpectClose(*pieces, *whole, "cuda");
  }
}

}  // namespace
}  // namespace tessera
