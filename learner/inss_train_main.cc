// tessera_inss_train: trains InSS's SAC-Discrete actor offline on the V100
// data and writes a checkpoint the "inss" policy loads.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/usage.h"
#include "learner/inss_trainer.h"
#include "learner/sac_discrete_agent.h"
#include "learner/torch_inss_actor.h"
#include "scheduler/inss_environment.h"
#include "sim/emulated_workload.h"
#include "sim/inss_v100_setup.h"

ABSL_FLAG(std::string, v100_profile,
          "../shared/data/igniter-v100/profile.jsonl",
          "iGniter's public V100 measurements (profile.jsonl).");
ABSL_FLAG(std::string, setup, "v100",
          "v100: iGniter's V100 measurements (../shared/data); emulated: "
          "the shipped emulated GPU model set (configs/emulated/models, "
          "profiles/emulated), as the live emulated cluster runs it.");
ABSL_FLAG(std::string, model_repository, "configs/emulated/models",
          "--setup=emulated: model configs (SLOs, max batch).");
ABSL_FLAG(std::string, profile_dir, "profiles",
          "--setup=emulated: directory with emulated/<model>.pbtxt.");
ABSL_FLAG(std::string, models, "",
          "Model slots, in state/action order (instances such as "
          "alexnet/2 allowed with --setup=v100). Empty: v100's four "
          "models, or every model of the emulated repository.");
ABSL_FLAG(int, gpus, 4, "Devices.");
ABSL_FLAG(int, episodes, 1500, "Episodes (the paper's E).");
ABSL_FLAG(int, steps, 200, "Steps (simulated seconds) per episode (T).");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the networks, replay and workloads.");
ABSL_FLAG(std::string, out, "inss",
          "Checkpoint stem: writes <out>.pt and <out>.pbtxt, and "
          "<out>-e<N>.* every --checkpoint_every episodes.");
ABSL_FLAG(int, checkpoint_every, 100, "Episodes between checkpoints.");
ABSL_FLAG(std::string, csv, "inss_training.csv",
          "Reward curve, one row per episode (empty: none). Plot it with "
          "scripts/plot_inss_training.py.");
ABSL_FLAG(int, eval_every, 4,
          "Every Nth episode is a deterministic evaluation (0: none).");
ABSL_FLAG(int, eval_episodes, 4, "Episodes per evaluation.");
ABSL_FLAG(std::string, slo_factors, "5,10",
          "SLOs trained on, as multiples of batch-1 whole-GPU latency "
          "(empty: the models' configured SLOs).");
ABSL_FLAG(double, penalty, 100, "Reward penalty omega on violations.");
ABSL_FLAG(double, reward_scale, 1,
          "Multiplies the rewards the agent learns from (the curve keeps "
          "Eq. 3's units).");
ABSL_FLAG(int, replay, 10000, "Replay size.");
ABSL_FLAG(int, minibatch, 100, "Minibatch size.");
ABSL_FLAG(double, learning_rate, 1e-4,
          "Learning rate of critics, actor and temperatures.");
ABSL_FLAG(double, discount, 0.99, "Discount gamma.");
ABSL_FLAG(double, target_entropy_ratio, 0.98,
          "Target entropy per head as a fraction of log(options).");
ABSL_FLAG(int, hidden1, 512, "First hidden layer.");
ABSL_FLAG(int, hidden2, 256, "Second hidden layer.");
ABSL_FLAG(int, threads, 1, "Torch intra-op threads.");
ABSL_FLAG(bool, progress, true, "Progress bar on stderr.");
ABSL_FLAG(std::string, evaluate, "",
          "Instead of training, evaluate this checkpoint (argmax actions), "
          "or 'round-robin' (model i on device i mod K, devices split "
          "evenly: a baseline), "
          "on --eval_episodes episodes of the evaluation seeds, with the "
          "same --setup, --steps and --slo_factors as its training.");

namespace tessera {
namespace {

// The baseline --evaluate=round-robin: model i on device i mod K, equal
// levels (devices split evenly among their models).
class RoundRobinActor : public InssActor {
 public:
  explicit RoundRobinActor(InssCheckpointInfo info) : info_(std::move(info)) {}
  const InssCheckpointInfo& info() const override { return info_; }
  absl::StatusOr<std::vector<float>> Probabilities(
      const std::vector<float>&) const override {
    const int n = info_.models_size(), k = info_.gpus(),
              u = info_.share_units();
    std::vector<float> p(n * (k + u), 0.f);
    for (int i = 0; i < n; ++i) {
      p[i * k + i % k] = 1.f;
      p[n * k + i * u + u / 2] = 1.f;
    }
    return p;
  }

 private:
  InssCheckpointInfo info_;
};

int Run(const std::string& command) {
  const std::string setup_name = absl::GetFlag(FLAGS_setup);
  if (setup_name != "v100" && setup_name != "emulated") {
    std::fprintf(stderr, "--setup must be v100 or emulated\n");
    return 2;
  }
  std::unique_ptr<V100Setup> v100;
  std::unique_ptr<EmulatedSetup> emu;
  std::vector<std::string> models =
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipEmpty());
  if (setup_name == "emulated") {
    auto loaded = LoadEmulatedSetup(absl::GetFlag(FLAGS_model_repository),
                                    absl::GetFlag(FLAGS_profile_dir), 0);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 2;
    }
    emu = std::move(*loaded);
    if (models.empty()) models = emu->repository->ModelNames();
  } else {
    auto loaded = LoadV100Setup(absl::GetFlag(FLAGS_v100_profile),
                                Share100Rule::kBatch1Ratio, 0);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 2;
    }
    v100 = std::move(*loaded);
    if (models.empty()) models = {"alexnet", "resnet50", "vgg19", "ssd"};
  }
  // --evaluate: the checkpoint says what it was trained for.
  std::shared_ptr<const InssActor> evaluated;
  if (absl::GetFlag(FLAGS_evaluate) == "round-robin") {
    InssCheckpointInfo rr = V100InssInfo(models, absl::GetFlag(FLAGS_gpus));
    evaluated = std::make_shared<RoundRobinActor>(rr);
  } else if (!absl::GetFlag(FLAGS_evaluate).empty()) {
    auto actor = TorchInssActor::Load(absl::GetFlag(FLAGS_evaluate));
    if (!actor.ok()) {
      std::fprintf(stderr, "%s\n", actor.status().ToString().c_str());
      return 2;
    }
    evaluated = *actor;
    models.assign(evaluated->info().models().begin(),
                  evaluated->info().models().end());
  }
  InssCheckpointInfo info = V100InssInfo(
      models, evaluated ? evaluated->info().gpus() : absl::GetFlag(FLAGS_gpus));
  info.set_hidden1_size(absl::GetFlag(FLAGS_hidden1));
  info.set_hidden2_size(absl::GetFlag(FLAGS_hidden2));
  info.set_seed(absl::GetFlag(FLAGS_seed));
  info.set_command(command);
  InssEnvironmentOptions env_options;
  env_options.steps = absl::GetFlag(FLAGS_steps);
  env_options.penalty = absl::GetFlag(FLAGS_penalty);
  env_options.slo_factors.clear();
  for (absl::string_view f : absl::StrSplit(absl::GetFlag(FLAGS_slo_factors),
                                            ',', absl::SkipEmpty())) {
    double v = 0;
    if (!absl::SimpleAtod(f, &v) || v <= 0) {
      std::fprintf(stderr, "bad --slo_factors entry '%s'\n",
                   std::string(f).c_str());
      return 2;
    }
    env_options.slo_factors.push_back(v);
    info.add_slo_factors(v);
  }
  ClusterSnapshot storage;
  absl::StatusOr<InssCluster> cluster;
  if (emu != nullptr) {
    info.set_profile_key("emulated");
    std::vector<WorkloadModel> slots;
    for (const std::string& m : models) slots.push_back({m, 1});
    storage = MakeEmulatedSnapshot(*emu, info.gpus(), slots);
    PolicyOptions options;
    options.interference = emu->interference;
    cluster = InssCluster::FromSnapshot(storage, options, info);
  } else {
    cluster = V100InssCluster(*v100, info, &storage);
  }
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.status().ToString().c_str());
    return 2;
  }
  if (evaluated) {
    auto r = InssTrainer::Evaluate(*cluster, env_options, *evaluated,
                                   absl::GetFlag(FLAGS_eval_episodes),
                                   InssTrainerOptions{}.eval_seed);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      return 2;
    }
    std::printf(
        "%s: mean reward %.3f per step, %.2f %% violations, "
        "capacity %.3f (%d episodes)\n",
        absl::GetFlag(FLAGS_evaluate).c_str(), r->mean_reward, r->violation_pct,
        r->mean_capacity, absl::GetFlag(FLAGS_eval_episodes));
    return 0;
  }
  SacOptions sac = TorchInssActor::NetworkOptions(info);
  sac.q_learning_rate = sac.policy_learning_rate =
      sac.temperature_learning_rate = absl::GetFlag(FLAGS_learning_rate);
  sac.discount = absl::GetFlag(FLAGS_discount);
  sac.target_entropy_ratio = absl::GetFlag(FLAGS_target_entropy_ratio);
  sac.replay_size = absl::GetFlag(FLAGS_replay);
  sac.minibatch_size = absl::GetFlag(FLAGS_minibatch);
  sac.seed = absl::GetFlag(FLAGS_seed);
  sac.threads = absl::GetFlag(FLAGS_threads);
  auto agent = SacDiscreteAgent::Create(sac);
  if (!agent.ok()) {
    std::fprintf(stderr, "%s\n", agent.status().ToString().c_str());
    return 2;
  }
  InssEnvironment env(*cluster, env_options, absl::GetFlag(FLAGS_seed));
  InssTrainerOptions options;
  options.episodes = absl::GetFlag(FLAGS_episodes);
  options.eval_every = absl::GetFlag(FLAGS_eval_every);
  options.eval_episodes = absl::GetFlag(FLAGS_eval_episodes);
  options.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  options.out_stem = absl::GetFlag(FLAGS_out);
  options.csv_path = absl::GetFlag(FLAGS_csv);
  options.reward_scale = absl::GetFlag(FLAGS_reward_scale);
  options.progress = absl::GetFlag(FLAGS_progress) ? stderr : nullptr;
  auto report = [&](const char* what) {
    const InssEpisodeRecord r =
        InssTrainer::Evaluate(*cluster, env_options, agent->get(),
                              options.eval_episodes, options.eval_seed);
    std::printf("%s actor: mean reward %.3f per step, %.2f %% violations\n",
                what, r.mean_reward, r.violation_pct);
    std::fflush(stdout);
  };
  report("untrained");
  InssTrainer trainer(&env, agent->get(), info, options);
  auto records = trainer.Run();
  if (!records.ok()) {
    std::fprintf(stderr, "%s\n", records.status().ToString().c_str());
    return 1;
  }
  report("trained");
  std::printf("wrote %s.pt and %s.pbtxt\n", options.out_stem.c_str(),
              options.out_stem.c_str());
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Trains InSS's SAC-Discrete actor offline in a simulator driven by "
      "InSS's latency model over the V100 profiles, with the paper's "
      "Table 1 hyper-parameters by default. Writes a checkpoint for "
      "--policy=inss, a reward-curve CSV and periodic checkpoints.\n"
      "The shipped learner/checkpoints/inss_v100x4 (docs/scheduling.md):\n"
      "  tessera_inss_train --models=alexnet,resnet50,vgg19,ssd,alexnet/1,"
      "alexnet/2,alexnet/3 --gpus=4 --episodes=300 --steps=100 --seed=1 "
      "--out=/tmp/inss --csv=/tmp/inss.csv   (then ship /tmp/inss-best.*)\n"
      "Baseline: tessera_inss_train --evaluate=round-robin --models=...");
  const std::vector<std::string> args(argv, argv + argc);
  absl::ParseCommandLine(argc, argv);
  return tessera::Run(absl::StrJoin(args, " "));
}
