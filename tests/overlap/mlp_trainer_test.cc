#include "overlap/mlp_trainer.h"

#include <random>

#include "gtest/gtest.h"
#include "overlap/group_sampler.h"

namespace tessera {
namespace {

TEST(MlpTest, EvaluatesAHandWrittenNetwork) {
  // y = relu(x0 − x1) · 2 + 1; normalised input (x − 1) · 0.5.
  MlpProto p;
  DenseLayerProto* h = p.add_layers();
  h->set_inputs(2);
  h->set_outputs(1);
  h->add_weights(1);
  h->add_weights(-1);
  h->add_biases(0);
  h->set_relu(true);
  DenseLayerProto* o = p.add_layers();
  o->set_inputs(1);
  o->set_outputs(1);
  o->add_weights(2);
  o->add_biases(1);
  auto raw = Mlp::FromProto(p);
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_DOUBLE_EQ(raw->Predict({5, 2}), 7);
  EXPECT_DOUBLE_EQ(raw->Predict({2, 5}), 1);
  p.add_input_offset(1);
  p.add_input_offset(1);
  p.add_input_scale(0.5);
  p.add_input_scale(0.5);
  EXPECT_DOUBLE_EQ(Mlp::FromProto(p)->Predict({5, 1}), 5);
  p.add_input_scale(1);  // three scales for two inputs
  EXPECT_FALSE(Mlp::FromProto(p).ok());
}

TEST(MlpTrainerTest, LearnsASmoothLatencyWithinAFewPercent) {
  // latency = 2 + x0 + 0.5 x0 x1 / 10, x in [0, 10].
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 10);
  std::vector<MlpSample> train, test;
  for (int i = 0; i < 1200; ++i) {
    const double a = u(rng), b = u(rng);
    MlpSample s{{static_cast<float>(a), static_cast<float>(b)},
                2 + a + 0.05 * a * b};
    (i < 1000 ? train : test).push_back(s);
  }
  MlpTrainerOptions options;
  options.epochs = 300;
  auto mlp = TrainMlp(train, options);
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  EXPECT_LT(MeanAbsolutePercentageError(*mlp, test), 0.03);
  EXPECT_FALSE(TrainMlp({}, options).ok());
  EXPECT_FALSE(TrainMlp({MlpSample{{1.0f}, 0.0}}, options).ok());
}

TEST(MlpTrainerTest, TheArtifactsRecipeTrainsOnRawInputsAndMilliseconds) {
  std::vector<MlpSample> samples;
  for (int i = 0; i < 50; ++i) {
    samples.push_back({{static_cast<float>(i % 7)}, 2.0 + i % 7});
  }
  MlpTrainerOptions artifact = ArtifactTraining();
  artifact.epochs = 2;
  auto raw = TrainMlp(samples, artifact);
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->proto().input_offset_size(), 0);
  EXPECT_FALSE(raw->proto().log_output());
  MlpTrainerOptions ours;
  ours.epochs = 2;
  auto standardised = TrainMlp(samples, ours);
  ASSERT_TRUE(standardised.ok());
  EXPECT_EQ(standardised->proto().input_offset_size(), 1);
  EXPECT_NEAR(standardised->proto().input_offset(0), 3.0, 0.1);
  EXPECT_TRUE(standardised->proto().log_output());
}

TEST(GroupSamplerTest, DrawsOnlyGroupsTheControllerCanCreate) {
  const ServiceCatalog& catalog = ServiceCatalog::A100();
  std::mt19937_64 rng(11);
  const std::vector<int> set = {1, 2, 5, 6};
  for (int i = 0; i < 500; ++i) {
    const int size = 1 + i % 4;
    const OperatorGroup g =
        SampleGroup(catalog, set, size, GroupSamplerOptions{}, rng);
    ASSERT_EQ(static_cast<int>(g.size()), size);
    bool completes = false;
    std::vector<int> seen;
    for (const GroupMember& m : g) {
      const int ops = catalog.service(m.service).operators;
      EXPECT_GE(m.start_op, 0);
      EXPECT_GT(m.end_op, m.start_op);
      EXPECT_LE(m.end_op, ops);
      EXPECT_EQ(m.batch, 4);
      EXPECT_EQ(m.seqlen > 0, m.service == 6);
      completes |= m.end_op == ops;
      EXPECT_EQ(std::count(seen.begin(), seen.end(), m.service), 0);
      seen.push_back(m.service);
    }
    EXPECT_TRUE(completes) << "every group finishes a query";
  }
}

TEST(GroupSamplerTest, LabelsAreTheTrimmedMedian) {
  EXPECT_DOUBLE_EQ(TrimmedMedianMs({1, 2, 3, 100, 0}), 2);
  EXPECT_DOUBLE_EQ(TrimmedMedianMs({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(TrimmedMedianMs({7}), 7);
}

}  // namespace
}  // namespace tessera
