// MlpInssActor on a hand-set network: logits, ReLU, device masking and
// the softmax per head computed by hand; shapes checked; files read back.
#include "scheduler/mlp_inss_actor.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// One model slot, two devices, two share units: state 10 + 2 * 2 = 14
// values, logits 1 * (2 + 2) = 4; hidden layers of 2.
InssCheckpointInfo TinyInfo() {
  InssCheckpointInfo info;
  info.set_max_models(1);
  info.set_gpus(2);
  info.set_share_units(2);
  info.set_share_unit_percent(50);
  info.set_state_size(14);
  info.set_hidden1_size(2);
  info.set_hidden2_size(2);
  return info;
}

InssActorWeights::Layer Layer(int inputs, int outputs,
                              std::vector<float> weight,
                              std::vector<float> bias) {
  InssActorWeights::Layer layer;
  layer.set_inputs(inputs);
  layer.set_outputs(outputs);
  layer.mutable_weight()->Add(weight.begin(), weight.end());
  layer.mutable_bias()->Add(bias.begin(), bias.end());
  return layer;
}

// h1 = ReLU(b1) (zero weights), h2 = ReLU(h1), logits = W3 h2:
// rows [1 0], [0 1], [0 0], [1 1].
InssActorWeights TinyWeights(float b1_first, float b1_second) {
  InssActorWeights w;
  *w.add_layers() =
      Layer(14, 2, std::vector<float>(28, 0), {b1_first, b1_second});
  *w.add_layers() = Layer(2, 2, {1, 0, 0, 1}, {0, 0});
  *w.add_layers() = Layer(2, 4, {1, 0, 0, 1, 0, 0, 1, 1}, {0, 0, 0, 0});
  return w;
}

// A state with devices 0 and 1 present as given (their first feature).
std::vector<float> State(bool device0, bool device1) {
  std::vector<float> state(14, 0.3f);
  state[10] = device0 ? 1 : 0;
  state[12] = device1 ? 1 : 0;
  return state;
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

TEST(MlpInssActorTest, ComputesTheHeadsByHand) {
  auto actor = MlpInssActor::Create(TinyInfo(), TinyWeights(1, 2));
  ASSERT_TRUE(actor.ok()) << actor.status();
  // h2 = [1, 2]: device logits [1, 2], share logits [0, 3].
  auto p = (*actor)->Probabilities(State(true, true));
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 4u);
  EXPECT_NEAR((*p)[0], Sigmoid(1 - 2), 1e-6);
  EXPECT_NEAR((*p)[1], Sigmoid(2 - 1), 1e-6);
  EXPECT_NEAR((*p)[2], Sigmoid(0 - 3), 1e-6);
  EXPECT_NEAR((*p)[3], Sigmoid(3 - 0), 1e-6);
  // A device the state lacks gets no probability.
  p = (*actor)->Probabilities(State(true, false));
  ASSERT_TRUE(p.ok());
  EXPECT_FLOAT_EQ((*p)[0], 1);
  EXPECT_FLOAT_EQ((*p)[1], 0);
  EXPECT_NEAR((*p)[3], Sigmoid(3), 1e-6);
}

TEST(MlpInssActorTest, ReluCutsNegativeActivations) {
  // h1 = ReLU([1, -2]) = [1, 0]: device logits [1, 0], share [0, 1].
  auto actor = MlpInssActor::Create(TinyInfo(), TinyWeights(1, -2));
  ASSERT_TRUE(actor.ok());
  auto p = (*actor)->Probabilities(State(true, true));
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR((*p)[0], Sigmoid(1), 1e-6);
  EXPECT_NEAR((*p)[3], Sigmoid(1), 1e-6);
}

TEST(MlpInssActorTest, RefusesShapesTheInfoDoesNotDescribe) {
  InssActorWeights two_layers = TinyWeights(1, 2);
  two_layers.mutable_layers()->RemoveLast();
  EXPECT_THAT(MlpInssActor::Create(TinyInfo(), two_layers).status().message(),
              HasSubstr("2 layers, not 3"));
  InssCheckpointInfo wider = TinyInfo();
  wider.set_hidden1_size(3);
  auto odd = MlpInssActor::Create(wider, TinyWeights(1, 2));
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(odd.status().message(), HasSubstr("layer 0 is 14 -> 2"));
  auto actor = MlpInssActor::Create(TinyInfo(), TinyWeights(1, 2));
  ASSERT_TRUE(actor.ok());
  EXPECT_EQ((*actor)->Probabilities({1, 2, 3}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MlpInssActorTest, LoadsTheInfoAndWeightsBesideIt) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "mlp_inss_actor";
  std::filesystem::create_directories(dir);
  const std::string stem = (dir / "tiny").string();
  std::ofstream(stem + ".pbtxt") << TinyInfo().DebugString();
  auto missing = MlpInssActor::Load(stem + ".pt");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("tiny.actor.binpb"));
  {
    std::ofstream out(stem + ".actor.binpb", std::ios::binary);
    ASSERT_TRUE(TinyWeights(1, 2).SerializeToOstream(&out));
  }
  auto actor = MlpInssActor::Load(stem + ".actor.binpb");
  ASSERT_TRUE(actor.ok()) << actor.status();
  EXPECT_EQ((*actor)->info().gpus(), 2);
  auto p = (*actor)->Probabilities(State(true, true));
  ASSERT_TRUE(p.ok());
  EXPECT_NEAR((*p)[1], Sigmoid(1), 1e-6);
  std::filesystem::remove_all(dir);
}

TEST(MlpInssActorTest, AnUntrainedActorHasTheInfosShapeAndItsSeedsWeights) {
  auto a = MlpInssActor::Untrained(TinyInfo(), 1);
  auto b = MlpInssActor::Untrained(TinyInfo(), 1);
  auto c = MlpInssActor::Untrained(TinyInfo(), 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status();
  auto pa = (*a)->Probabilities(State(true, true));
  auto pb = (*b)->Probabilities(State(true, true));
  auto pc = (*c)->Probabilities(State(true, true));
  ASSERT_TRUE(pa.ok() && pb.ok() && pc.ok()) << pa.status();
  ASSERT_EQ(pa->size(), 4u);  // 1 slot x (2 devices + 2 share units)
  EXPECT_EQ(*pa, *pb);        // same seed, same weights
  EXPECT_NE(*pa, *pc);
  // A softmax per head.
  EXPECT_NEAR((*pa)[0] + (*pa)[1], 1, 1e-6);
  EXPECT_NEAR((*pa)[2] + (*pa)[3], 1, 1e-6);
  InssCheckpointInfo wrong = TinyInfo();
  wrong.set_state_size(13);
  EXPECT_FALSE(MlpInssActor::Untrained(wrong, 1).ok());
}

}  // namespace
}  // namespace tessera
