// The InSS learner with real LibTorch: the agent's save/load, the trained
// policy plugged into the registry, and a smoke training run.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/inss_imitation_trainer.h"
#include "learner/inss_trainer.h"
#include "learner/sac_discrete_agent.h"
#include "learner/torch_inss_actor.h"
#include "scheduler/inss_environment.h"
#include "scheduler/inss_policy.h"
#include "scheduler/mlp_inss_actor.h"
#include "scheduler/policy_registry.h"
#include "sim/inss_reproduction.h"
#include "sim/inss_v100_setup.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";
const char kCheckpoints[] = TESSERA_SOURCE_DIR "/learner/checkpoints/";

class InssLearnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kProfile)) {
      GTEST_SKIP() << "no V100 data at " << kProfile;
    }
    auto setup = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
    ASSERT_TRUE(setup.ok()) << setup.status();
    setup_ = std::move(*setup);
    dir_ = std::filesystem::temp_directory_path() /
           ("inss_learner_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Up to four instances of the V100 models on one or two GPUs, small
  // networks.
  InssCheckpointInfo SmallInfo() {
    InssCheckpointInfo info =
        V100InssInfo({"alexnet", "resnet50", "vgg19", "ssd"}, 4, 2);
    info.set_hidden1_size(64);
    info.set_hidden2_size(64);
    return info;
  }
  InssWorkloadSampler Sampler(const InssCheckpointInfo& info) {
    InssWorkloadSamplerOptions o;
    o.max_gpus = info.gpus();
    o.max_models = info.max_models();
    auto sampler = V100InssSampler(*setup_, info, o);
    EXPECT_TRUE(sampler.ok()) << sampler.status();
    return *std::move(sampler);
  }
  SacOptions Small(const InssCheckpointInfo& info) {
    SacOptions o = TorchInssActor::NetworkOptions(info);
    o.minibatch_size = 32;
    o.replay_size = 2000;
    o.q_learning_rate = o.policy_learning_rate = 1e-3;
    o.temperature_learning_rate = 1e-3;
    o.seed = 5;
    return o;
  }

  // An untrained agent of SmallInfo() saved as checkpoint dir_/`name`
  // (.pt, .pbtxt, .actor.binpb), and a state of its environment.
  struct Saved {
    std::unique_ptr<SacDiscreteAgent> agent;
    std::string stem;
    std::vector<float> state;
  };
  Saved SaveUntrained(const std::string& name, uint64_t env_seed) {
    const InssCheckpointInfo info = SmallInfo();
    auto agent = SacDiscreteAgent::Create(Small(info));
    EXPECT_TRUE(agent.ok()) << agent.status();
    if (!agent.ok()) return {};
    const InssWorkloadSampler sampler = Sampler(info);
    InssEnvironment env(&sampler, InssEnvironmentOptions{}, env_seed);
    Saved saved{std::move(*agent), (dir_ / name).string(), env.Reset()};
    InssTrainer trainer(&env, saved.agent.get(), info, InssTrainerOptions{});
    EXPECT_TRUE(trainer.Save(saved.stem, 0, 0).ok());
    return saved;
  }

  std::unique_ptr<V100Setup> setup_;
  std::filesystem::path dir_;
};

TEST_F(InssLearnerTest, SavedActorReloadsWithTheSameProbabilities) {
  const InssCheckpointInfo info = SmallInfo();
  Saved saved = SaveUntrained("actor", 3);
  ASSERT_NE(saved.agent, nullptr);
  auto& agent = saved.agent;
  const std::vector<float>& state = saved.state;
  const std::string& stem = saved.stem;
  auto loaded = TorchInssActor::Load(stem + ".pt");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto probs = (*loaded)->Probabilities(state);
  ASSERT_TRUE(probs.ok()) << probs.status();
  const std::vector<float> expected = agent->Probabilities(state);
  ASSERT_EQ(probs->size(), expected.size());
  ASSERT_EQ(expected.size(), 4u * (2 + 10));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_FLOAT_EQ((*probs)[i], expected[i]) << i;
  }
  // Each head is a distribution.
  double first_head = 0;
  for (int g = 0; g < 2; ++g) first_head += expected[g];
  EXPECT_NEAR(first_head, 1.0, 1e-5);
  // An actor loaded for planning has no critics: a training call on it is
  // a broken invariant, not memory corruption.
  auto planning_only = SacDiscreteAgent::LoadActor(Small(info), stem + ".pt");
  ASSERT_TRUE(planning_only.ok()) << planning_only.status();
  EXPECT_FALSE((*planning_only)->Update().has_value());
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      (*planning_only)->Remember(state, std::vector<int>(8, 0), 1, state),
      "loaded for planning");
  // A state of the wrong size is refused, not crashed on.
  EXPECT_EQ((*loaded)->Probabilities({1, 2, 3}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The weights the planner reads (ActorWeights, InssActorWeights) are the
// network's: loaded back into LibTorch they give the same probabilities.
TEST_F(InssLearnerTest, ActorWeightsLoadBackIntoTheSameNetwork) {
  const InssCheckpointInfo info = SmallInfo();
  auto agent = SacDiscreteAgent::Create(Small(info));
  ASSERT_TRUE(agent.ok()) << agent.status();
  const InssActorWeights weights = (*agent)->ActorWeights();
  ASSERT_EQ(weights.layers_size(), 3);
  EXPECT_EQ(weights.layers(0).inputs(), info.state_size());
  EXPECT_EQ(weights.layers(2).outputs(),
            info.max_models() * (info.gpus() + info.share_units()));
  auto copy = SacDiscreteAgent::LoadActor(Small(info), weights);
  ASSERT_TRUE(copy.ok()) << copy.status();
  const InssWorkloadSampler sampler = Sampler(info);
  InssEnvironment env(&sampler, InssEnvironmentOptions{}, 3);
  const std::vector<float> state = env.Reset();
  const std::vector<float> a = (*agent)->Probabilities(state);
  const std::vector<float> b = (*copy)->Probabilities(state);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], b[i]) << i;
  InssActorWeights short_of_a_layer = weights;
  short_of_a_layer.mutable_layers()->RemoveLast();
  EXPECT_EQ(SacDiscreteAgent::LoadActor(Small(info), short_of_a_layer)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// The torch-free actor the inss policy plans with computes the learner's
// network: on the shipped checkpoints, over random states with random
// devices present, every probability within 1e-5 and every head's choice
// the same.
TEST(InssActorEquivalenceTest, TheTorchFreeActorComputesTheLearnersNetwork) {
  for (const char* name : {"inss_v100", "inss_emulated_4gpu"}) {
    const std::string stem = std::string(kCheckpoints) + name;
    auto torch_actor = TorchInssActor::Load(stem);
    ASSERT_TRUE(torch_actor.ok()) << torch_actor.status();
    auto plain = MlpInssActor::Load(stem);
    ASSERT_TRUE(plain.ok()) << plain.status();
    const InssCheckpointInfo& info = (*plain)->info();
    const int slots = info.max_models(), gpus = info.gpus(),
              levels = info.share_units();
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> unit(0, 1);
    double worst = 0;
    int different_choices = 0;
    for (int n = 0; n < 200; ++n) {
      std::vector<float> state(info.state_size());
      for (float& v : state) v = unit(rng);
      const int present = 1 + static_cast<int>(rng() % gpus);
      for (int k = 0; k < gpus; ++k) {
        state[InssEnvironment::kSlotFeatures * slots +
              k * InssEnvironment::kDeviceFeatures] = k < present ? 1 : 0;
      }
      auto a = (*torch_actor)->Probabilities(state);
      auto b = (*plain)->Probabilities(state);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(a->size(), b->size());
      for (size_t i = 0; i < a->size(); ++i) {
        worst = std::max(worst, std::abs(double((*a)[i]) - (*b)[i]));
      }
      for (int h = 0; h < slots * 2; ++h) {
        const int begin =
            h < slots ? h * gpus : slots * gpus + (h - slots) * levels;
        const int n_out = h < slots ? gpus : levels;
        const auto pick = [&](const std::vector<float>& p) {
          return std::max_element(p.begin() + begin,
                                  p.begin() + begin + n_out) -
                 p.begin();
        };
        different_choices += pick(*a) != pick(*b);
      }
    }
    std::printf(
        "[ report ] %s: largest probability difference %.2g, %d of "
        "%d head choices differ\n",
        name, worst, different_choices, 200 * slots * 2);
    EXPECT_LT(worst, 1e-5) << name;
    EXPECT_EQ(different_choices, 0) << name;
  }
}

// tessera_inss_train --export_actor: a checkpoint with only its LibTorch
// archive gets the weights the torch-free planner reads, and the planner
// then gives the network's probabilities.
TEST_F(InssLearnerTest, ExportedWeightsPlanAsTheArchivedNetwork) {
  Saved saved = SaveUntrained("archived", 4);
  ASSERT_NE(saved.agent, nullptr);
  const std::vector<float>& state = saved.state;
  const std::string& stem = saved.stem;
  std::filesystem::remove(stem + ".actor.binpb");  // an older checkpoint
  EXPECT_EQ(MlpInssActor::Load(stem).status().code(),
            absl::StatusCode::kNotFound);

  auto archived = TorchInssActor::Load(stem);
  ASSERT_TRUE(archived.ok()) << archived.status();
  ASSERT_TRUE((*archived)->ExportWeights(stem).ok());
  auto planner = MlpInssActor::Load(stem);
  ASSERT_TRUE(planner.ok()) << planner.status();
  auto want = (*archived)->Probabilities(state);
  auto got = (*planner)->Probabilities(state);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_NEAR((*got)[i], (*want)[i], 1e-5) << i;
  }
}

TEST_F(InssLearnerTest, MissingOrMismatchedCheckpointsAreClearErrors) {
  auto missing = TorchInssActor::Load((dir_ / "nothing.pt").string());
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("nothing.pbtxt"));
  // The .pbtxt describes a different network than the .pt holds.
  const InssCheckpointInfo info = SmallInfo();
  auto agent = SacDiscreteAgent::Create(Small(info));
  ASSERT_TRUE(agent.ok());
  const std::string stem = (dir_ / "odd").string();
  ASSERT_TRUE((*agent)->SaveActor(stem + ".pt").ok());
  InssCheckpointInfo wrong = info;
  wrong.set_hidden1_size(32);
  std::ofstream(stem + ".pbtxt") << wrong.DebugString();
  auto odd = TorchInssActor::Load(stem);
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(odd.status().message(), HasSubstr("cannot load"));
  // A bad path does not load, and "inss" without an actor is not created.
  EXPECT_FALSE(MlpInssActor::LoadOrShipped((dir_ / "nothing").string()).ok());
  PolicyOptions options;
  auto none = PolicyRegistry::Create("inss", options);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.status().message(), HasSubstr("actor"));
  auto shipped = MlpInssActor::LoadOrShipped("");
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  options.inss_actor = *shipped;
  options.inss_fallback = "no-such-policy";
  EXPECT_FALSE(PolicyRegistry::Create("inss", options).ok());
}

TEST_F(InssLearnerTest, ShippedCheckpointPlansWhatItCovers) {
  auto shipped = MlpInssActor::LoadOrShipped("");
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  auto policy = PolicyRegistry::Create("inss", [&] {
    PolicyOptions o;
    o.interference = setup_->linear;
    o.inss_actor = *shipped;
    return o;
  }());
  ASSERT_TRUE(policy.ok()) << policy.status();
  std::vector<WorkloadModel> models;
  for (const char* m :
       {"alexnet", "resnet50", "vgg19", "ssd", "alexnet/1", "alexnet/2"}) {
    models.push_back({m, 50});
  }
  const ClusterSnapshot snap = MakeV100Snapshot(*setup_, 4, models, 10);
  auto plan = (*policy)->Schedule(snap);
  ASSERT_TRUE(plan.ok()) << plan.status();
  int served = 0;
  for (const DevicePlan& d : plan->devices()) {
    double share = 0;
    for (const GpuletPlan& g : d.gpulets()) {
      share += g.share_percent();
      served += g.models_size();
      EXPECT_GT(g.models(0).batch_size(), 0);
    }
    EXPECT_LE(share, 100.0 + 1e-9);
  }
  EXPECT_EQ(served, 6);  // each model once ((1e): no replicas)
  // inss-ni: the same actor without the interference term.
  auto ni = PolicyRegistry::Create("inss-ni", [&] {
    PolicyOptions o;
    o.interference = setup_->linear;
    o.inss_actor = *shipped;
    return o;
  }());
  ASSERT_TRUE(ni.ok()) << ni.status();
  auto ni_plan = (*ni)->Schedule(snap);
  ASSERT_TRUE(ni_plan.ok()) << ni_plan.status();
  EXPECT_EQ(ni_plan->policy(), "inss-ni");
  // One to eight GPUs are covered (planned, or refused for the load);
  // nine are not, nor ten models.
  EXPECT_NE((*policy)
                ->Schedule(MakeV100Snapshot(*setup_, 8, models, 10))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_NE((*policy)
                ->Schedule(MakeV100Snapshot(*setup_, 1, {{"alexnet", 50}}, 10))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  auto nine = (*policy)->Schedule(MakeV100Snapshot(*setup_, 9, models, 10));
  EXPECT_EQ(nine.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(nine.status().message(), HasSubstr("covers 1 to 8 devices"));
  std::vector<WorkloadModel> ten;
  for (int i = 0; i < 10; ++i) ten.push_back({absl::StrCat("alexnet/", i), 5});
  auto crowded = (*policy)->Schedule(MakeV100Snapshot(*setup_, 8, ten, 10));
  EXPECT_EQ(crowded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(crowded.status().message(), HasSubstr("at most 9 models"));
}

// The InSS reproduction's smoke run: the shipped actor against gpulet on
// the six-model mix at SLO 5x, two loads, short runs.
// The search-trained checkpoint plans the held-out 9 models on 8 GPUs with
// every model once, and not as the SAC actor does.
TEST_F(InssLearnerTest, ShippedSearchCheckpointPlansItsOwnPlacement) {
  auto search =
      MlpInssActor::Load(std::string(kCheckpoints) + "inss_v100_search");
  ASSERT_TRUE(search.ok()) << search.status();
  EXPECT_EQ((*search)->info().teacher(), "search");
  auto sac = MlpInssActor::LoadOrShipped("");
  ASSERT_TRUE(sac.ok()) << sac.status();
  EXPECT_EQ((*sac)->info().teacher(), "");
  std::vector<WorkloadModel> models;
  for (const char* m : {"alexnet", "alexnet/2", "resnet50", "resnet50/2",
                        "resnet50/3", "ssd", "ssd/2", "vgg19", "vgg19/2"}) {
    models.push_back({m, 30});
  }
  const ClusterSnapshot snap = MakeV100Snapshot(*setup_, 8, models, 5);
  auto placement = [&](std::shared_ptr<const MlpInssActor> actor) {
    auto policy = PolicyRegistry::Create("inss", [&] {
      PolicyOptions o;
      o.interference = setup_->linear;
      o.inss_actor = actor;
      return o;
    }());
    EXPECT_TRUE(policy.ok()) << policy.status();
    auto plan = (*policy)->Schedule(snap);
    EXPECT_TRUE(plan.ok()) << plan.status();
    std::map<std::string, std::pair<std::string, double>> where;
    if (!plan.ok()) return where;
    for (const DevicePlan& d : plan->devices()) {
      for (const GpuletPlan& g : d.gpulets()) {
        for (const ModelAssignment& a : g.models()) {
          EXPECT_EQ(where.count(a.model()), 0u) << a.model();
          where[a.model()] = {d.device_id(), g.share_percent()};
        }
      }
    }
    return where;
  };
  const auto mine = placement(*search);
  EXPECT_EQ(mine.size(), 9u);
  EXPECT_NE(mine, placement(*sac));
}

TEST_F(InssLearnerTest, ReproductionHasTheTablesShapeAndServesLightLoads) {
  InssReproduction::Options options;
  options.slo_factors = {5};
  options.load_fractions = {0.5, 2};
  options.policies = {"inss", "gpulet"};
  options.sim.duration = absl::Seconds(4);
  options.sim.warmup = absl::Seconds(1);
  const InssReproduction reproduction(setup_.get(), options);
  PolicyOptions base;
  base.interference = setup_->linear;
  base.rules = PresetRules(RULES_PRESET_TESSERA);
  auto shipped = MlpInssActor::LoadOrShipped("");
  ASSERT_TRUE(shipped.ok()) << shipped.status();
  base.inss_actor = *shipped;
  auto result = reproduction.Run(base);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->slos.size(), 1u);
  const auto& s = result->slos[0];
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_GT(s.reference_rps, 0);
  EXPECT_DOUBLE_EQ(s.reference_rps, s.rows[1].max_rps);  // gpulet's
  ASSERT_EQ(s.loads_rps.size(), 2u);
  EXPECT_DOUBLE_EQ(s.loads_rps[0], 0.5 * s.reference_rps);
  for (const auto& row : s.rows) {
    ASSERT_EQ(row.served_rps.size(), 2u) << row.policy;
    for (size_t i = 0; i < 2; ++i) {
      // Never more than offered (1 % for the Poisson draw).
      EXPECT_LE(row.served_rps[i], 1.01 * s.loads_rps[i]) << row.policy;
    }
    // Half of gpulet's limit: every policy serves nearly all of it.
    EXPECT_GE(row.served_rps[0], 0.97 * s.loads_rps[0]) << row.policy;
  }
  // Two throughput claims (gpulet; igniter is not listed) and violations.
  const auto claims = InssReproduction::Verdicts(*result);
  ASSERT_EQ(claims.size(), 2u);
  std::string csv;
  InssReproduction::AppendCsv(*result, "tessera", &csv);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 2);
}

// The agent alone on a two-head bandit: reward 1 when slot 0's device
// head picks device 1 and its share head level index 2, else 0. A few
// hundred updates must make the argmax right.
// --teacher=search: a small actor imitating InssPlacementSearch on drawn
// V100 workloads gets more of the teacher's room than it had untrained,
// and its checkpoints load and say how they were trained.
TEST_F(InssLearnerTest, ImitationBringsTheActorTowardsTheTeacher) {
  const InssCheckpointInfo info = SmallInfo();
  const InssWorkloadSampler sampler = Sampler(info);
  SacOptions sac = Small(info);
  sac.minibatch_size = sac.replay_size = 32;
  auto agent = SacDiscreteAgent::Create(sac);
  ASSERT_TRUE(agent.ok()) << agent.status();
  InssImitationOptions options;
  options.samples = 400;
  options.validation_samples = 100;
  options.epochs = 30;
  options.minibatch = 32;
  options.search.random_draws = 16;
  options.out_stem = (dir_ / "imitated").string();
  options.csv_path = (dir_ / "imitated.csv").string();
  InssEnvironmentOptions env_options;
  InssImitationTrainer trainer(&sampler, env_options, agent->get(), info,
                               options);
  // The same validation states Run draws (seed + 7919).
  const auto validation = trainer.Generate(100, options.seed + 7919, 2);
  ASSERT_EQ(validation.size(), 100u);
  auto mean = [](const std::vector<double>& v) {
    double sum = 0;
    for (double x : v) sum += std::min(x, 1.0);
    return v.empty() ? 0 : sum / v.size();
  };
  const double untrained = mean(trainer.RoomRatios(validation));
  auto epochs = trainer.Run();
  ASSERT_TRUE(epochs.ok()) << epochs.status();
  ASSERT_EQ(epochs->size(), 30u);
  EXPECT_LT(epochs->back().loss, epochs->front().loss);
  const double trained = mean(trainer.RoomRatios(validation));
  std::printf(
      "imitation: room of the teacher's %.3f untrained, %.3f after "
      "30 epochs (geometric mean %.3f)\n",
      untrained, trained, epochs->back().room_ratio);
  EXPECT_GT(trained, untrained + 0.1);
  for (const std::string stem : {"imitated", "imitated-best"}) {
    auto actor = MlpInssActor::Load((dir_ / stem).string());
    ASSERT_TRUE(actor.ok()) << actor.status();
    EXPECT_EQ((*actor)->info().teacher(), "search");
    EXPECT_EQ((*actor)->info().imitation_samples(), 400);
  }
}

// A 32/32 network over a 3-value state, seed 3.
SacOptions TinyNetwork(int slots, int gpus, int levels) {
  SacOptions o;
  o.state_size = 3;
  o.slots = slots;
  o.gpus = gpus;
  o.levels = levels;
  o.hidden1_size = 32;
  o.hidden2_size = 32;
  o.seed = 3;
  return o;
}

// --imitation_scaled_copies: a first state of an episode comes back with
// every rate times m, leaving 1 to 8 times the rates room on the teacher's
// placement, the state encoded anew and the teacher's action unchanged;
// later states are not copied.
TEST_F(InssLearnerTest, ScaledCopiesKeepTheTeachersAnswer) {
  const InssCheckpointInfo info = SmallInfo();
  const InssWorkloadSampler sampler = Sampler(info);
  auto agent = SacDiscreteAgent::Create(Small(info));
  ASSERT_TRUE(agent.ok()) << agent.status();
  InssImitationOptions options;
  options.scaled_copies = 3;
  options.search.random_draws = 8;
  InssImitationTrainer trainer(&sampler, InssEnvironmentOptions{}, agent->get(),
                               info, options);
  std::vector<InssImitationTrainer::Sample> samples =
      trainer.Generate(8, 1, 1);  // two episodes of four states
  ASSERT_EQ(samples.size(), 8u);
  int fresh = 0;
  for (const auto& s : samples) fresh += s.fresh && s.teacher_room > 0;
  ASSERT_GT(fresh, 0);
  const std::vector<InssImitationTrainer::Sample> drawn = samples;
  trainer.AddScaledCopies(&samples);
  ASSERT_EQ(samples.size(), drawn.size() + 3 * fresh);
  size_t at = drawn.size();
  for (const auto& original : drawn) {
    if (!original.fresh || original.teacher_room <= 0) continue;
    for (int c = 0; c < 3; ++c, ++at) {
      const auto& copy = samples[at];
      EXPECT_FALSE(copy.fresh);
      EXPECT_EQ(copy.action, original.action);
      EXPECT_GE(copy.teacher_room, 1 - 1e-9);
      EXPECT_LE(copy.teacher_room, 8 + 1e-9);
      const double m = original.teacher_room / copy.teacher_room;
      for (size_t i = 0; i < copy.rates_rps.size(); ++i) {
        EXPECT_NEAR(copy.rates_rps[i], original.rates_rps[i] * m, 1e-9);
      }
      const int n = static_cast<int>(copy.rates_rps.size());
      EXPECT_EQ(copy.state,
                InssEnvironment::EncodeState(
                    copy.cluster, copy.rates_rps, std::vector<double>(n, 0),
                    InssProvisioning{std::vector<int>(n, -1),
                                     std::vector<double>(n, 0)}));
      EXPECT_NE(copy.state, original.state);
    }
  }
}

TEST(SacDiscreteAgentTest, LearnsABandit) {
  SacOptions o = TinyNetwork(1, 2, 4);
  o.minibatch_size = 32;
  o.replay_size = 1000;
  o.q_learning_rate = o.policy_learning_rate = 1e-3;
  o.temperature_learning_rate = 1e-3;
  auto agent = SacDiscreteAgent::Create(o);
  ASSERT_TRUE(agent.ok()) << agent.status();
  const std::vector<float> state = {0.5f, 1.f, 0.f};
  for (int step = 0; step < 600; ++step) {
    const std::vector<int> a = (*agent)->Act(state, /*sample=*/true);
    const double reward = (a[0] == 1 ? 0.5 : 0) + (a[1] == 2 ? 0.5 : 0);
    (*agent)->Remember(state, a, reward, state);
    (*agent)->Update();
  }
  EXPECT_EQ((*agent)->Act(state, /*sample=*/false), (std::vector<int>{1, 2}));
}

TEST(SacDiscreteAgentTest, ImitatesTheActionsItIsShown) {
  SacOptions o = TinyNetwork(2, 3, 4);
  o.minibatch_size = 2;
  o.replay_size = 2;
  o.policy_learning_rate = 1e-2;
  auto agent = SacDiscreteAgent::Create(o);
  ASSERT_TRUE(agent.ok()) << agent.status();
  const std::vector<std::vector<float>> states = {{1.f, 0.f, 0.f},
                                                  {0.f, 1.f, 0.f}};
  // Slot 1 of the second state has no target: its heads are not trained.
  const std::vector<std::vector<int>> actions = {{2, 0, 1, 3}, {1, -1, 0, -1}};
  const std::vector<float> before = (*agent)->Probabilities(states[1]);
  const double first = (*agent)->Imitate(states, actions);
  double last = first;
  for (int step = 0; step < 200; ++step) {
    last = (*agent)->Imitate(states, actions);
  }
  EXPECT_LT(last, first / 10);
  EXPECT_EQ((*agent)->Act(states[0], false), (std::vector<int>{2, 0, 1, 3}));
  const std::vector<int> second = (*agent)->Act(states[1], false);
  EXPECT_EQ(second[0], 1);
  EXPECT_EQ(second[2], 0);
  // The heads it was shown are near certain.
  const std::vector<float> p = (*agent)->Probabilities(states[0]);
  EXPECT_GT(p[0 * 3 + 2], 0.9);
  EXPECT_GT(p[6 + 1 * 4 + 3], 0.9);
  EXPECT_NE(before, (*agent)->Probabilities(states[1]));
}

// A toy InSS problem with a known optimum: two synthetic models on two
// devices, rates fixed, SLOs generous. Capacity rises with the share and
// a shared device serves both less, so the best action puts the models on
// different devices with every unit each (reward 2 x c(100 %) / H). A
// fixed-seed training must find it (argmax of every head).
class InssToyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snapshot_ = testing::Snapshot(2);
    for (const char* m : {"a", "b"}) {
      testing::AddModel(&snapshot_, testing::LinearProfile(m, 5, 5), 40, 200);
    }
    info_ = MakeInssInfo("test-gpu", {"a", "b"}, 2, 2, /*unit_percent=*/25);
    info_.set_hidden1_size(32);
    info_.set_hidden2_size(32);
    auto cluster =
        InssCluster::FromSnapshot(snapshot_, testing::PaperRules(), info_);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::make_unique<InssCluster>(*cluster);
    env_options_.steps = 20;
    env_options_.presence_probability = 1;
    env_options_.min_rate_fraction = env_options_.max_rate_fraction = 0.3;
    env_options_.slo_factors = {20};
  }
  SacOptions Options() {
    SacOptions o = TorchInssActor::NetworkOptions(info_);
    o.minibatch_size = 32;
    o.replay_size = 2000;
    o.q_learning_rate = o.policy_learning_rate = 1e-3;
    o.temperature_learning_rate = 1e-3;
    // tessera_inss_train's default. Seeds 1-7 all find the optimum in
    // 500 episodes; at 0.3, seed 2 fixed a's share head on 75 % early.
    o.target_entropy_ratio = 0.5;
    o.seed = 5;
    return o;
  }
  ClusterSnapshot snapshot_;
  InssCheckpointInfo info_;
  std::unique_ptr<InssCluster> cluster_;
  InssEnvironmentOptions env_options_;
};

TEST_F(InssToyTest, SmokeTrainingFindsTheKnownOptimum) {
  auto agent = SacDiscreteAgent::Create(Options());
  ASSERT_TRUE(agent.ok()) << agent.status();
  InssEnvironment env(*cluster_, env_options_, 11);
  // The optimum's reward, and that it beats its neighbours.
  env.Reset();
  const double best = env.Apply({0, 1, 3, 3}).reward;
  EXPECT_GT(best, env.Apply({0, 0, 3, 3}).reward);
  const double next_best = env.Apply({0, 1, 3, 2}).reward;
  std::printf("toy rewards: optimum %.3f, one share lower %.3f\n", best,
              next_best);
  EXPECT_GT(best, next_best);
  InssTrainerOptions options;
  options.episodes = 500;
  options.eval_every = 10;
  options.eval_episodes = 1;
  InssTrainer trainer(&env, agent->get(), info_, options);
  ASSERT_TRUE(trainer.Run().ok());
  const std::vector<float> start = env.Reset();
  const std::vector<int> a = (*agent)->Act(start, /*sample=*/false);
  // How sure the actor is: its heads' probabilities of the optimum.
  const std::vector<float> p = (*agent)->Probabilities(start);
  std::printf("toy actor: devices %.3f %.3f, shares %.3f %.3f\n",
              p[0 * 2 + a[0]], p[1 * 2 + a[1]], p[4 + 0 * 4 + 3],
              p[4 + 1 * 4 + 3]);
  EXPECT_NE(a[0], a[1]) << "the models share a device";
  EXPECT_EQ(a[2], 3) << "a's share";
  EXPECT_EQ(a[3], 3) << "b's share";
  const InssEpisodeRecord r =
      InssTrainer::Evaluate(env, agent->get(), 1, options.eval_seed);
  EXPECT_NEAR(r.mean_reward, best, 1e-6);
}

// A run stopped and resumed goes on exactly as one that never stopped:
// the same replay, optimisers, temperatures and random generators.
TEST_F(InssToyTest, AResumedRunContinuesWhereItStopped) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("inss_resume_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  info_.set_planning_rules("tessera");
  InssTrainerOptions options;
  options.eval_every = 3;
  options.eval_episodes = 1;
  options.checkpoint_every = 0;
  options.resume_every = 2;
  auto run = [&](const std::string& stem, int episodes, bool resume,
                 SacDiscreteAgent* agent) {
    InssEnvironment env(*cluster_, env_options_, 11);
    InssTrainerOptions o = options;
    o.episodes = episodes;
    o.resume = resume;
    o.out_stem = (dir / stem).string();
    o.csv_path = (dir / (stem + ".csv")).string();
    InssTrainer trainer(&env, agent, info_, o);
    auto records = trainer.Run();
    EXPECT_TRUE(records.ok()) << records.status();
    return trainer.state();
  };
  auto straight = SacDiscreteAgent::Create(Options());
  ASSERT_TRUE(straight.ok());
  run("straight", 8, false, straight->get());
  auto first = SacDiscreteAgent::Create(Options());
  ASSERT_TRUE(first.ok());
  run("split", 4, false, first->get());
  // A fresh agent restores the replay as it was saved.
  auto second = SacDiscreteAgent::Create(Options());
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE((*second)->LoadTraining((dir / "split-resume.pt").string()).ok());
  ASSERT_EQ((*second)->replay_count(), (*first)->replay_count());
  ASSERT_GT((*first)->replay_count(), 0);
  for (int i = 0; i < (*first)->replay_count(); i += 7) {
    EXPECT_EQ((*second)->ReplayState(i), (*first)->ReplayState(i)) << i;
  }
  const InssTrainingState resumed = run("split", 8, true, second->get());
  EXPECT_EQ(resumed.episode(), 8);
  // 8 episodes, every third an evaluation: 6 x 20 steps.
  EXPECT_EQ(resumed.steps(), 6 * 20);
  const std::vector<float> state =
      InssEnvironment(*cluster_, env_options_, 1).Reset();
  EXPECT_EQ((*second)->Probabilities(state), (*straight)->Probabilities(state));
  // The CSV was appended to: a header and 8 rows.
  std::ifstream csv(dir / "split.csv");
  int lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  EXPECT_EQ(lines, 9);
  // A state file of another network shape is refused with its name.
  SacOptions other = Options();
  other.replay_size = 500;
  auto odd = SacDiscreteAgent::Create(other);
  ASSERT_TRUE(odd.ok());
  auto status = (*odd)->LoadTraining((dir / "split-resume.pt").string());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("split-resume.pt"));
  // Nor does a run under other planning rules go on from it.
  InssCheckpointInfo paper = info_;
  paper.set_planning_rules("paper");
  InssEnvironment env(*cluster_, env_options_, 11);
  InssTrainerOptions o = options;
  o.episodes = 10;
  o.resume = true;
  o.out_stem = (dir / "split").string();
  auto third = SacDiscreteAgent::Create(Options());
  ASSERT_TRUE(third.ok());
  auto refused = InssTrainer(&env, third->get(), paper, o).Run();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("'tessera'"));
  EXPECT_THAT(refused.status().message(), HasSubstr("'paper'"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessera
