#include "proxy/emulated_model_runner.h"

#include <cmath>
#include <cstring>
#include <numeric>

#include "common/text_proto.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// L(b, p) = b * 10 ms at 100%, twice that at 50%.
ModelProfile Profile() {
  ModelProfile p;
  EXPECT_TRUE(ParseTextProto(
                  R"pb(
                    model: "m"
                    device_kind: "emulated"
                    memory_bytes: 1000
                    latency { batch_size: 1 share_percent: 50 latency_ms: 20 }
                    latency { batch_size: 1 share_percent: 100 latency_ms: 10 }
                    latency { batch_size: 4 share_percent: 50 latency_ms: 80 }
                    latency { batch_size: 4 share_percent: 100 latency_ms: 40 }
                  )pb",
                  &p)
                  .ok());
  return p;
}

ModelConfig Config() {
  ModelConfig c;
  EXPECT_TRUE(ParseTextProto(R"pb(
                               name: "m"
                               platform: "emulated"
                               max_batch_size: 4
                               slo_ms: 100
                               input {
                                 name: "x"
                                 data_type: TYPE_FP32
                                 dims: [ -1, 3 ]
                               }
                               output {
                                 name: "y"
                                 data_type: TYPE_FP32
                                 dims: [ -1, 5 ]
                               }
                               output {
                                 name: "z"
                                 data_type: TYPE_INT64
                                 dims: [ -1, 2 ]
                               }
                             )pb",
                             &c)
                  .ok());
  return c;
}

class EmulatedModelRunnerTest : public ::testing::Test {
 protected:
  std::unique_ptr<EmulatedModelRunner> Make(double share, double scale,
                                            double noise_cv = 0) {
    EmulatedModelRunner::Options o;
    o.share_percent = share;
    o.time_scale = scale;
    o.noise_cv = noise_cv;
    o.sleep = [this](absl::Duration d) { slept_.push_back(d); };
    auto r =
        EmulatedModelRunner::Create({{"m", Profile()}}, {{"m", Config()}}, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return std::move(*r);
  }

  // Runs a batch whose row r holds `values[r]` everywhere.
  absl::StatusOr<std::vector<TensorView>> Run(EmulatedModelRunner* runner,
                                              std::vector<float> values,
                                              bool shape_only = false) {
    input_.assign(values.size() * 3, 0);
    for (size_t r = 0; r < values.size(); ++r) {
      for (int i = 0; i < 3; ++i) input_[r * 3 + i] = values[r];
    }
    TensorView in;
    in.name = "x";
    in.data_type = TYPE_FP32;
    in.shape = {static_cast<int64_t>(values.size()), 3};
    in.data = reinterpret_cast<uint8_t*>(input_.data());
    in.size_bytes = shape_only ? 0 : input_.size() * sizeof(float);
    out_.assign(4096, 0);
    return runner->Run("m", {in}, out_.data(), out_.size(), &exec_);
  }

  std::vector<absl::Duration> slept_;
  std::vector<float> input_;
  std::vector<uint8_t> out_;
  absl::Duration exec_;
};

TEST_F(EmulatedModelRunnerTest, LatencyIsProfileTimesInterferenceTimesScale) {
  auto runner = Make(/*share=*/50, /*scale=*/3);
  ASSERT_TRUE(Run(runner.get(), {1, 2, 3, 4}).ok());
  EXPECT_EQ(exec_, absl::Milliseconds(80 * 3));
  ASSERT_EQ(slept_.size(), 1u);
  EXPECT_LE(slept_[0], exec_);
  EXPECT_GT(slept_[0], exec_ - absl::Milliseconds(50));

  runner->SetInterferenceFactor(1.25);
  ASSERT_TRUE(Run(runner.get(), {1}).ok());
  EXPECT_EQ(exec_, absl::Milliseconds(20 * 1.25 * 3));
  // Interpolated between profiled batches (2 -> 40 ms at 50%).
  runner->SetInterferenceFactor(0);  // none
  EXPECT_EQ(runner->ExpectedLatency("m", 2), absl::Milliseconds(40 * 3));
}

TEST_F(EmulatedModelRunnerTest, OutputsHaveConfiguredShapesAndFollowInputs) {
  auto runner = Make(100, 1);
  auto first = Run(runner.get(), {1, 2});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ((*first)[0].name, "y");
  EXPECT_EQ((*first)[0].shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ((*first)[1].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*first)[1].data_type, TYPE_INT64);
  auto row = [](const TensorView& v, int r) {
    const size_t n = v.size_bytes / v.shape[0];
    return std::vector<uint8_t>(v.data + r * n, v.data + (r + 1) * n);
  };
  const auto y_row0 = row((*first)[0], 0);
  const auto y_row1 = row((*first)[0], 1);
  EXPECT_NE(y_row0, y_row1);  // different inputs, different outputs
  // Same input row in another batch position: same output row.
  auto second = Run(runner.get(), {2, 1});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(row((*second)[0], 1), y_row0);
  EXPECT_EQ(row((*second)[0], 0), y_row1);
  // Floats are in [0, 1).
  const float* f = reinterpret_cast<const float*>((*second)[0].data);
  for (int i = 0; i < 10; ++i) {
    EXPECT_GE(f[i], 0);
    EXPECT_LT(f[i], 1);
  }
  // Shape-only inputs (no bytes) still give outputs of the right shape.
  auto shape_only = Run(runner.get(), {0, 0, 0}, /*shape_only=*/true);
  ASSERT_TRUE(shape_only.ok());
  EXPECT_EQ((*shape_only)[0].shape, (std::vector<int64_t>{3, 5}));
}

TEST_F(EmulatedModelRunnerTest, NoiseHasMeanOneAndTheConfiguredSpread) {
  auto runner = Make(100, 1, /*noise_cv=*/0.1);
  std::vector<double> ratios;
  for (int i = 0; i < 4000; ++i) {
    ASSERT_TRUE(Run(runner.get(), {1}).ok());
    ratios.push_back(absl::FDivDuration(exec_, absl::Milliseconds(10)));
  }
  const double mean =
      std::accumulate(ratios.begin(), ratios.end(), 0.0) / ratios.size();
  double var = 0;
  for (double r : ratios) var += (r - mean) * (r - mean);
  const double cv = std::sqrt(var / ratios.size()) / mean;
  EXPECT_NEAR(mean, 1.0, 0.01);
  EXPECT_NEAR(cv, 0.1, 0.01);
}

TEST_F(EmulatedModelRunnerTest, ADroppedModelIsRefused) {
  auto runner = Make(100, 1);
  ASSERT_TRUE(Run(runner.get(), {1}).ok());
  runner->Drop("m");
  runner->Drop("not_loaded");  // ignored
  EXPECT_EQ(Run(runner.get(), {1}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(EmulatedModelRunnerTest, RejectsBadInput) {
  auto runner = Make(100, 1);
  EXPECT_EQ(Run(runner.get(), {1, 2, 3, 4, 5}).status().code(),
            absl::StatusCode::kInvalidArgument);  // batch 5 > max 4
  EmulatedModelRunner::Options o;
  o.share_percent = 0;
  EXPECT_FALSE(
      EmulatedModelRunner::Create({{"m", Profile()}}, {{"m", Config()}}, o)
          .ok());
  EXPECT_EQ(
      EmulatedModelRunner::Create({}, {{"m", Config()}}, {}).status().code(),
      absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera
