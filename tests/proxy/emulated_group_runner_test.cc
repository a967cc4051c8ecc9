#include "proxy/emulated_group_runner.h"

#include <cmath>
#include <cstring>

#include "gtest/gtest.h"

namespace tessera {
namespace {

const char kDataDir[] = TESSERA_SHARED_DIR "/data/abacus-a100";

ModelConfig Model(const std::string& name, int segments) {
  ModelConfig m;
  m.set_name(name);
  m.set_platform("emulated");
  m.set_max_batch_size(4);
  m.set_segment_count(segments);
  TensorConfig* in = m.add_input();
  in->set_name("INPUT__0");
  in->set_data_type(TYPE_FP32);
  for (int64_t d : {-1, 3, 8, 8}) in->add_dims(d);
  TensorConfig* out = m.add_output();
  out->set_name("OUTPUT__0");
  out->set_data_type(TYPE_FP32);
  for (int64_t d : {-1, 10}) out->add_dims(d);
  return m;
}

class EmulatedGroupRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    configs_["resnet101"] = Model("resnet101", 35);
    configs_["resnet152"] = Model("resnet152", 52);
    configs_["inception_v3"] = Model("inception_v3", 14);
    EmulatedGroupRunner::Options options;
    options.ground_truth_dir = kDataDir;
    options.sleep = [this](absl::Duration d) { slept_.push_back(d); };
    auto runner = EmulatedGroupRunner::Create(configs_, options);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
    input_.assign(4 * 3 * 8 * 8 * sizeof(float), 0);
    for (size_t i = 0; i < input_.size(); ++i) input_[i] = i * 7 % 251;
  }

  GroupMemberRun Member(uint64_t id, const std::string& model, int start,
                        int end, uint8_t* out = nullptr) {
    GroupMemberRun m;
    m.query_id = id;
    m.model = model;
    m.start_op = start;
    m.end_op = end;
    if (start == 0) {
      TensorView v;
      v.name = "INPUT__0";
      v.data_type = TYPE_FP32;
      v.shape = {4, 3, 8, 8};
      v.data = input_.data();
      v.size_bytes = input_.size();
      m.inputs.push_back(v);
    }
    if (out != nullptr) {
      m.out = out;
      m.out_capacity = 4096;
    }
    return m;
  }

  std::map<std::string, ModelConfig> configs_;
  std::unique_ptr<EmulatedGroupRunner> runner_;
  std::vector<absl::Duration> slept_;
  std::vector<uint8_t> input_;
};

TEST_F(EmulatedGroupRunnerTest, AGroupTakesTheGroundTruthsTimeWithinItsNoise) {
  const OperatorGroup group = {{1, 0, 35, 4, 0}, {2, 0, 52, 4, 0}};
  const double mean_ms = runner_->MeanMs(group);
  std::vector<uint8_t> out_a(4096), out_b(4096);
  const int n = 400;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    absl::Duration exec;
    auto outputs =
        runner_->RunGroup({Member(2 * i + 1, "resnet101", 0, 35, out_a.data()),
                           Member(2 * i + 2, "resnet152", 0, 52, out_b.data())},
                          &exec);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    const double ratio = absl::ToDoubleMilliseconds(exec) / mean_ms;
    sum += ratio;
    sum2 += ratio * ratio;
  }
  const double mean = sum / n;
  const double sd = std::sqrt(sum2 / n - mean * mean);
  // N(1, 4.5 %): the mean within 4 standard errors, the spread within 25 %.
  EXPECT_NEAR(mean, 1.0, 4 * 0.045 / std::sqrt(n));
  EXPECT_NEAR(sd, 0.045, 0.011);
  ASSERT_EQ(slept_.size(), static_cast<size_t>(n));
}

TEST_F(EmulatedGroupRunnerTest, RangesOfAQueryComposeToTheWholeQuery) {
  std::vector<uint8_t> whole(4096), pieces(4096);
  absl::Duration exec;
  ASSERT_TRUE(
      runner_->RunGroup({Member(1, "resnet101", 0, 35, whole.data())}, &exec)
          .ok());
  auto first =
      runner_->RunGroup({Member(2, "resnet101", 0, 10),
                         Member(3, "resnet152", 0, 52, whole.data() + 2048)},
                        &exec);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE((*first)[0].empty());  // operators left: no outputs yet
  EXPECT_EQ((*first)[1].size(), 1u);
  auto second =
      runner_->RunGroup({Member(2, "resnet101", 10, 35, pieces.data())}, &exec);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ((*second)[0].size(), 1u);
  EXPECT_EQ((*second)[0][0].shape, (std::vector<int64_t>{4, 10}));
  EXPECT_EQ(std::memcmp(whole.data(), pieces.data(), 4 * 10 * sizeof(float)),
            0);
}

TEST_F(EmulatedGroupRunnerTest, RefusesWhatTheDataOrTheQueryDoesNotAllow) {
  absl::Duration exec;
  // Does not continue where query 1 stopped (nothing ran yet).
  auto gap = runner_->RunGroup({Member(1, "resnet101", 5, 10)}, &exec);
  EXPECT_EQ(gap.status().code(), absl::StatusCode::kInvalidArgument);
  auto out_of_range = runner_->RunGroup({Member(2, "resnet101", 0, 36)}, &exec);
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  // The authors measured triplets only of resnet101, resnet152, vgg19, bert.
  std::vector<uint8_t> out(4096);
  auto triplet =
      runner_->RunGroup({Member(3, "resnet101", 0, 35, out.data()),
                         Member(4, "resnet152", 0, 52, out.data()),
                         Member(5, "inception_v3", 0, 14, out.data())},
                        &exec);
  EXPECT_EQ(triplet.status().code(), absl::StatusCode::kFailedPrecondition);
  // A failed group forgets its queries: query 3 cannot continue.
  auto after = runner_->RunGroup({Member(3, "resnet101", 10, 35)}, &exec);
  EXPECT_EQ(after.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(slept_.empty());
}

TEST(EmulatedGroupRunnerCreateTest, ChecksTheModelsAgainstTheA100Services) {
  std::map<std::string, ModelConfig> configs;
  configs["resnet50"] = Model("resnet50", 17);
  EmulatedGroupRunner::Options options;
  options.ground_truth_dir = kDataDir;
  EXPECT_EQ(EmulatedGroupRunner::Create(configs, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  configs.clear();
  configs["lenet"] = Model("lenet", 4);  // not an A100 service
  EXPECT_EQ(EmulatedGroupRunner::Create(configs, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
