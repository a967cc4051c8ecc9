// The simulator as the judge of InSS's training steps, on iGniter's V100
// measurements (../shared/data, read at run time).
#include "sim/simulated_inss_judge.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "sim/inss_v100_setup.h"

namespace tessera {
namespace {

const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";

class SimulatedInssJudgeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kProfile)) {
      GTEST_SKIP() << "no V100 data at " << kProfile;
    }
    auto setup = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
    ASSERT_TRUE(setup.ok()) << setup.status();
    setup_ = std::move(*setup);
    info_ = V100InssInfo({"alexnet", "resnet50", "vgg19", "ssd"}, 3, 2);
    InssWorkloadSamplerOptions o;
    o.max_gpus = 2;
    o.max_models = 3;
    auto sampler = V100InssSampler(*setup_, info_, o);
    ASSERT_TRUE(sampler.ok()) << sampler.status();
    sampler_ = std::make_unique<InssWorkloadSampler>(*std::move(sampler));
  }
  std::unique_ptr<V100Setup> setup_;
  InssCheckpointInfo info_;
  std::unique_ptr<InssWorkloadSampler> sampler_;
};

TEST_F(SimulatedInssJudgeTest, ScoresTheStepsPlanInTheSimulator) {
  auto cluster = sampler_->Make({"alexnet", "vgg19"}, 2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  for (InssModelSlot& s : cluster->mutable_slots()) {
    if (s.latency != nullptr) s.slo_ms = 10 * s.base_latency_ms;
  }
  const SimulatedInssJudge judge(setup_->truth.get(),
                                 SimulatedInssJudge::StepOptions());
  const std::vector<bool> active = {true, true, false};
  // One model per GPU, whole GPUs, a light load: nothing violates.
  const InssProvisioning apart =
      InssProvisioning::FromAction(*cluster, {0, 1, 0}, {10, 10, 1}, active);
  std::vector<double> rates = {50, 20, 0};
  const std::vector<double> none(3, 0);
  InssBatchResult bda = InssBatching::Decide(*cluster, apart, rates, none, {});
  ASSERT_TRUE(bda.ok) << bda.why;
  std::vector<double> v =
      judge.ViolationFractions(*cluster, apart, bda, rates, 1);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_LT(v[0], 0.01);
  EXPECT_LT(v[1], 0.01);
  EXPECT_EQ(v[2], 0);
  // Far past what a tenth of a GPU serves: BDA cannot batch vgg19 there,
  // so all of its requests violate; so do those of a model BDA gave no
  // batch.
  const InssProvisioning squeezed =
      InssProvisioning::FromAction(*cluster, {0, 0, 0}, {9, 1, 1}, active);
  rates = {50, 200, 0};
  bda = InssBatching::Decide(*cluster, squeezed, rates, none, {});
  ASSERT_FALSE(bda.feasible[1]);
  v = judge.ViolationFractions(*cluster, squeezed, bda, rates, 1);
  EXPECT_EQ(v[1], 1);
  bda.batch[0] = 0;
  v = judge.ViolationFractions(*cluster, squeezed, bda, rates, 1);
  EXPECT_EQ(v[0], 1);
}

}  // namespace
}  // namespace tessera
