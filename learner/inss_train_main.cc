// tessera_inss_train: trains InSS's SAC-Discrete actor offline on the V100
// data and writes a checkpoint the "inss" policy loads.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/usage.h"
#include "learner/inss_imitation_trainer.h"
#include "learner/inss_trainer.h"
#include "learner/sac_discrete_agent.h"
#include "learner/torch_inss_actor.h"
#include "scheduler/inss_environment.h"
#include "scheduler/mlp_inss_actor.h"
#include "scheduler/planning_rules.h"
#include "sim/emulated_workload.h"
#include "sim/inss_v100_setup.h"
#include "sim/simulated_inss_judge.h"

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
          "Models the actor covers instances of. Empty: v100's four "
          "models, or every model of the emulated repository.");
ABSL_FLAG(int, max_models, 9,
          "Model slots: the most models with traffic a plan may have.");
ABSL_FLAG(int, gpus, 8, "The most devices the actor covers.");
ABSL_FLAG(int, min_gpus, 1, "Episodes draw 1..--gpus devices from here.");
ABSL_FLAG(int, min_models, 1,
          "Episodes draw --min_models..--max_models models.");
ABSL_FLAG(int, max_models_per_gpu, 3,
          "Episodes on K devices draw at most this many models per device "
          "(0: no limit).");
ABSL_FLAG(std::string, held_out, "default",
          "Workload keys (model*count+...@devices) no training episode "
          "draws, comma-separated. default: the held-out set of "
          "docs/scheduling.md with --setup=v100, none with emulated.");
ABSL_FLAG(double, max_load, 1.0,
          "Highest rate as a fraction of each model's share of the "
          "episode's devices' capacity.");
ABSL_FLAG(std::string, judge, "simulator",
          "What scores a step's violations: simulator (the discrete-event "
          "simulator runs the step's plan for one second on the setup's "
          "ground truth, what the experiments measure against) or "
          "latency-model (InSS's Eq. 2 and a fluid queue: its violations "
          "correlate with the simulator's at only r = 0.49, "
          "docs/scheduling.md).");
ABSL_FLAG(std::string, workload, "",
          "--evaluate: this workload only (a key such as "
          "alexnet*2+vgg19@4) instead of drawn ones.");
ABSL_FLAG(int, episodes, 2000,
          "Episodes, evaluations included: 2000 with --eval_every=4 is the "
          "paper's budget of 1500 training episodes x 200 steps.");
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
ABSL_FLAG(int, eval_episodes, 8, "Episodes per evaluation.");
ABSL_FLAG(std::string, slo_factors, "3,5,10",
          "SLOs trained on, as multiples of batch-1 whole-GPU latency "
          "(empty: the models' configured SLOs).");
ABSL_FLAG(double, penalty, 100, "Reward penalty omega on violations.");
ABSL_FLAG(double, headroom_weight, 0,
          "Adds w log2(h) to each step's reward, h the multiple of the "
          "step's rates BDA can still batch on the step's provisioning "
          "(capped at --headroom_cap). 0: Eq. 3 alone, the paper's reward. "
          "A Tessera addition: Eq. 3 scores two placements that both serve "
          "the step's rates alike however far either could grow "
          "(docs/scheduling.md).");
ABSL_FLAG(double, headroom_cap, 8, "Cap on h of --headroom_weight (> 1).");
ABSL_FLAG(double, reward_scale, 0.01,
          "Multiplies the rewards the agent learns from (the curve keeps "
          "Eq. 3's units; the paper normalises without saying how). With "
          "the paper's discount, 1 collapsed the policy's entropy to 0.001 "
          "within 26 episodes (91 % violations) where 0.01 kept it at 1.8; "
          "the shipped actor used 0.1 with --discount=0 "
          "(docs/scheduling.md).");
ABSL_FLAG(int, replay, 10000, "Replay size.");
ABSL_FLAG(int, minibatch, 100, "Minibatch size.");
ABSL_FLAG(double, learning_rate, 1e-4,
          "Learning rate of critics, actor and temperatures.");
ABSL_FLAG(double, discount, 0.99,
          "Discount gamma (the paper's 0.99). With --judge=simulator no "
          "queue carries between steps, so each step is a contextual "
          "bandit: the shipped actor used 0, which learned faster "
          "(docs/scheduling.md).");
ABSL_FLAG(double, target_entropy_ratio, 0.5,
          "Target entropy per head as a fraction of log(options). The "
          "paper's -log(1 + iota) is negative (no discrete policy reaches "
          "it); SAC-Discrete's 0.98 held the policy near uniform (its "
          "temperature climbed to 9.4, docs/scheduling.md).");
ABSL_FLAG(std::string, teacher, "sac",
          "How the actor learns: sac (SAC-Discrete on Eq. 3, the paper's) or "
          "search (a Tessera addition: supervised imitation of the placements "
          "a search finds, InssPlacementSearch: random draws, then single "
          "moves and swaps, scored by how far BDA can grow the rates; "
          "--imitation_* and --teacher_draws set it; docs/scheduling.md).");
ABSL_FLAG(int, imitation_samples, 20000,
          "--teacher=search: training states (drawn as the episodes draw "
          "them), each with the teacher's action.");
ABSL_FLAG(int, imitation_validation, 400,
          "--teacher=search: validation states (another seed); each epoch "
          "reports the room of the actor's action over the teacher's.");
ABSL_FLAG(int, imitation_epochs, 40,
          "--teacher=search: passes over the states.");
ABSL_FLAG(int, imitation_scaled_copies, 0,
          "--teacher=search: per drawn workload's first state, copies with "
          "its rates scaled so that 1 to 8 times them fit on the teacher's "
          "placement (the same answer at the loads a search for the maximum "
          "asks about).");
ABSL_FLAG(int, teacher_draws, 128,
          "--teacher=search: the teacher's random draws before its local "
          "search.");
ABSL_FLAG(int, teacher_threads, 2,
          "--teacher=search: threads that run the teacher.");
ABSL_FLAG(std::string, rules, "tessera",
          "Planning rules of the training environment's BDA: tessera "
          "(calibrated defaults) or paper (docs/planning-rules.md).");
ABSL_FLAG(std::string, rules_override, "",
          "PlanningRules text overriding single fields of --rules, e.g. "
          "'inss { queueing_tail: 0.005 }' (the rules the shipped actors "
          "were trained under; proto/policy_rules.proto).");
ABSL_FLAG(int, hidden1, 512, "First hidden layer.");
ABSL_FLAG(int, hidden2, 256, "Second hidden layer.");
ABSL_FLAG(int, threads, 1, "Torch intra-op threads.");
ABSL_FLAG(bool, progress, true, "Progress bar on stderr.");
ABSL_FLAG(bool, resume, false,
          "Go on from <out>-resume.pt/.pbtxt (same flags otherwise): the "
          "replay, optimisers, generators and episode count are restored "
          "and the CSV is appended to. Refused when the state was saved "
          "under other planning rules (--rules, --rules_override).");
ABSL_FLAG(int, resume_every, 25,
          "Episodes between training-state checkpoints (<out>-resume.*).");
ABSL_FLAG(int, plateau_evals, 0,
          "Stop when the best of the last N evaluations is not above the "
          "best before them by more than --plateau_tolerance (0: run the "
          "whole budget).");
ABSL_FLAG(double, plateau_tolerance, 0.01,
          "Relative improvement the plateau criterion asks for.");
ABSL_FLAG(std::string, evaluate, "",
          "Instead of training, evaluate this checkpoint (argmax actions), "
          "or 'round-robin' (model i on device i mod K, devices split "
          "evenly: a baseline), "
          "on --eval_episodes episodes of the evaluation seeds (drawn "
          "workloads, or --workload), with the same --setup, --steps and "
          "--slo_factors as its training.");

ABSL_FLAG(std::string, export_actor, "",
          "Instead of training, write <stem>.actor.binpb, the weights the "
          "torch-free actor of --policy=inss plans with, from the LibTorch "
          "archive <stem>.pt of a checkpoint that has none yet (training "
          "writes both).");

namespace tessera {
namespace {

// The baseline --evaluate=round-robin: model i on device i mod K, equal
// levels (devices split evenly among their models).
class RoundRobinActor : public InssActor {
 public:
  explicit RoundRobinActor(InssCheckpointInfo info) : info_(std::move(info)) {}
  const InssCheckpointInfo& info() const override { return info_; }
  absl::StatusOr<std::vector<float>> Probabilities(
      const std::vector<float>& state) const override {
    const int n = info_.max_models(), k = info_.gpus(), u = info_.share_units();
    int devices = 0;
    for (int g = 0; g < k; ++g) {
      devices += state[InssEnvironment::kSlotFeatures * n +
                       InssEnvironment::kDeviceFeatures * g] > 0.5f
                     ? 1
                     : 0;
    }
    std::vector<float> p(n * (k + u), 0.f);
    for (int i = 0; i < n; ++i) {
      p[i * k + i % std::max(1, devices)] = 1.f;
      p[n * k + i * u + u - 1] = 1.f;
    }
    return p;
  }

 private:
  InssCheckpointInfo info_;
};

template <typename T>
int Fail(const absl::StatusOr<T>& s) {
  std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
  return 2;
}
int Fail(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return 2;
}

absl::StatusOr<std::vector<double>> SloFactors() {
  std::vector<double> out;
  for (absl::string_view f : absl::StrSplit(absl::GetFlag(FLAGS_slo_factors),
                                            ',', absl::SkipEmpty())) {
    double v = 0;
    if (!absl::SimpleAtod(f, &v) || v <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad --slo_factors entry '", f, "'"));
    }
    out.push_back(v);
  }
  return out;
}

// The pool the episodes draw from: the setup's models and devices.
struct Pool {
  const GroundTruth* truth() const {
    return v100 != nullptr ? v100->truth.get() : emulated->truth.get();
  }
  std::unique_ptr<V100Setup> v100;
  std::unique_ptr<EmulatedSetup> emulated;
  std::vector<std::string> models;
  std::string profile_key;
  ClusterSnapshot snapshot;
  PolicyOptions policy;
};

// The pool's SLOs are `slo_factor` x batch-1 latency (episodes set their
// own; the pool's must lie within what the checkpoint covers).
absl::StatusOr<Pool> LoadPool(int gpus, double slo_factor) {
  Pool pool;
  const std::string setup = absl::GetFlag(FLAGS_setup);
  pool.models =
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipEmpty());
  std::vector<WorkloadModel> slots;
  if (setup == "emulated") {
    ASSIGN_OR_RETURN(pool.emulated,
                     LoadEmulatedSetup(absl::GetFlag(FLAGS_model_repository),
                                       absl::GetFlag(FLAGS_profile_dir), 0));
    if (pool.models.empty())
      pool.models = pool.emulated->repository->ModelNames();
    for (const std::string& m : pool.models) slots.push_back({m, 1});
    pool.profile_key = "emulated";
    pool.snapshot = MakeEmulatedSnapshot(*pool.emulated, gpus, slots);
    pool.policy.interference = pool.emulated->interference;
  } else if (setup == "v100") {
    ASSIGN_OR_RETURN(pool.v100, LoadV100Setup(absl::GetFlag(FLAGS_v100_profile),
                                              Share100Rule::kBatch1Ratio, 0));
    if (pool.models.empty())
      pool.models = {"alexnet", "resnet50", "vgg19", "ssd"};
    for (const std::string& m : pool.models) slots.push_back({m, 1});
    pool.profile_key = "v100";
    pool.snapshot = MakeV100Snapshot(*pool.v100, gpus, slots, slo_factor);
    pool.policy.interference = pool.v100->linear;
  } else {
    return absl::InvalidArgumentError("--setup must be v100 or emulated");
  }
  ASSIGN_OR_RETURN(pool.policy.rules,
                   RulesFromFlags(absl::GetFlag(FLAGS_rules),
                                  absl::GetFlag(FLAGS_rules_override)));
  return pool;
}

absl::StatusOr<InssWorkloadSamplerOptions> SamplerOptions(
    const InssCheckpointInfo& info) {
  InssWorkloadSamplerOptions o;
  o.min_gpus = absl::GetFlag(FLAGS_min_gpus);
  o.max_gpus = info.gpus();
  o.min_models = absl::GetFlag(FLAGS_min_models);
  o.max_models = info.max_models();
  o.max_models_per_gpu = absl::GetFlag(FLAGS_max_models_per_gpu);
  const std::string held = absl::GetFlag(FLAGS_held_out);
  if (held == "default") {
    if (info.profile_key() == "v100") o.held_out = V100InssHeldOut();
  } else {
    for (absl::string_view key : absl::StrSplit(held, ',', absl::SkipEmpty())) {
      ASSIGN_OR_RETURN(auto w, InssWorkloadSampler::ParseKey(std::string(key)));
      o.held_out.push_back(InssWorkloadSampler::Key(w.models, w.gpus));
    }
  }
  return o;
}

// `judge` is set when --judge=simulator.
absl::StatusOr<InssEnvironmentOptions> EnvironmentOptions(
    const InssStepJudge* judge) {
  InssEnvironmentOptions o;
  o.judge = judge;
  o.steps = absl::GetFlag(FLAGS_steps);
  o.penalty = absl::GetFlag(FLAGS_penalty);
  o.headroom_weight = absl::GetFlag(FLAGS_headroom_weight);
  o.headroom_cap = absl::GetFlag(FLAGS_headroom_cap);
  if (o.headroom_weight < 0 || o.headroom_cap <= 1) {
    return absl::InvalidArgumentError(
        "--headroom_weight must be >= 0 and --headroom_cap > 1");
  }
  o.max_rate_fraction = absl::GetFlag(FLAGS_max_load);
  ASSIGN_OR_RETURN(o.slo_factors, SloFactors());
  return o;
}

// --evaluate: the actor (or round-robin) on drawn workloads or one.
int Evaluate(const InssWorkloadSampler& sampler,
             const InssEnvironmentOptions& env_options,
             const InssActor& actor) {
  std::unique_ptr<InssEnvironment> env;
  const std::string workload = absl::GetFlag(FLAGS_workload);
  if (workload.empty()) {
    env = std::make_unique<InssEnvironment>(&sampler, env_options, 0);
  } else {
    auto w = InssWorkloadSampler::ParseKey(workload);
    if (!w.ok()) return Fail(w);
    auto cluster = sampler.Make(w->models, w->gpus);
    if (!cluster.ok()) return Fail(cluster);
    InssEnvironmentOptions fixed = env_options;
    fixed.presence_probability = 1;
    env = std::make_unique<InssEnvironment>(*std::move(cluster), fixed, 0);
  }
  auto r =
      InssTrainer::Evaluate(*env, actor, absl::GetFlag(FLAGS_eval_episodes),
                            InssTrainerOptions{}.eval_seed);
  if (!r.ok()) return Fail(r);
  std::printf(
      "%s: mean reward %.3f per step, %.2f %% violations, "
      "capacity %.3f (%d episodes%s%s)\n",
      absl::GetFlag(FLAGS_evaluate).c_str(), r->mean_reward, r->violation_pct,
      r->mean_capacity, absl::GetFlag(FLAGS_eval_episodes),
      workload.empty() ? "" : ", ", workload.c_str());
  return 0;
}

int Train(const InssWorkloadSampler& sampler,
          const InssEnvironmentOptions& env_options,
          const InssCheckpointInfo& info) {
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
  if (!agent.ok()) return Fail(agent);
  InssEnvironment env(&sampler, env_options, absl::GetFlag(FLAGS_seed));
  InssTrainerOptions options;
  options.episodes = absl::GetFlag(FLAGS_episodes);
  options.eval_every = absl::GetFlag(FLAGS_eval_every);
  options.eval_episodes = absl::GetFlag(FLAGS_eval_episodes);
  options.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  options.out_stem = absl::GetFlag(FLAGS_out);
  options.csv_path = absl::GetFlag(FLAGS_csv);
  options.reward_scale = absl::GetFlag(FLAGS_reward_scale);
  options.progress = absl::GetFlag(FLAGS_progress) ? stderr : nullptr;
  options.resume = absl::GetFlag(FLAGS_resume);
  options.resume_every = absl::GetFlag(FLAGS_resume_every);
  options.plateau_evals = absl::GetFlag(FLAGS_plateau_evals);
  options.plateau_tolerance = absl::GetFlag(FLAGS_plateau_tolerance);
  InssTrainer trainer(&env, agent->get(), info, options);
  auto records = trainer.Run();
  if (!records.ok()) {
    std::fprintf(stderr, "%s\n", records.status().ToString().c_str());
    return 1;
  }
  const InssEpisodeRecord r = InssTrainer::Evaluate(
      env, agent->get(), options.eval_episodes, options.eval_seed);
  std::printf(
      "after %d episodes (%lld steps): mean reward %.3f per step, %.2f %% "
      "violations; best evaluation %.3f\n",
      trainer.state().episode(),
      static_cast<long long>(trainer.state().steps()), r.mean_reward,
      r.violation_pct, trainer.state().best_eval_reward());
  if (trainer.written().empty()) {
    std::printf("wrote no checkpoint%s\n",
                options.out_stem.empty() ? " (--out is empty)" : "");
  } else {
    std::vector<std::string> files;
    for (const std::string& stem : trainer.written()) {
      files.push_back(stem + ".pt");
    }
    std::printf("wrote %s (each with its .pbtxt)\n",
                absl::StrJoin(files, ", ").c_str());
  }
  return 0;
}

// --teacher=search: the actor imitates InssPlacementSearch.
int Imitate(const InssWorkloadSampler& sampler,
            InssEnvironmentOptions env_options, InssCheckpointInfo info) {
  // The steps between states only move the rates: nothing is judged.
  env_options.judge = nullptr;
  info.clear_judge();
  SacOptions sac = TorchInssActor::NetworkOptions(info);
  sac.policy_learning_rate = absl::GetFlag(FLAGS_learning_rate);
  sac.minibatch_size = absl::GetFlag(FLAGS_minibatch);
  sac.replay_size = sac.minibatch_size;  // no replay: the states are fixed
  sac.seed = absl::GetFlag(FLAGS_seed);
  sac.threads = absl::GetFlag(FLAGS_threads);
  auto agent = SacDiscreteAgent::Create(sac);
  if (!agent.ok()) return Fail(agent);
  InssImitationOptions options;
  options.samples = absl::GetFlag(FLAGS_imitation_samples);
  options.validation_samples = absl::GetFlag(FLAGS_imitation_validation);
  options.epochs = absl::GetFlag(FLAGS_imitation_epochs);
  options.scaled_copies = absl::GetFlag(FLAGS_imitation_scaled_copies);
  options.minibatch = sac.minibatch_size;
  options.search.random_draws = absl::GetFlag(FLAGS_teacher_draws);
  options.threads = absl::GetFlag(FLAGS_teacher_threads);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.out_stem = absl::GetFlag(FLAGS_out);
  options.csv_path = absl::GetFlag(FLAGS_csv);
  options.progress = absl::GetFlag(FLAGS_progress) ? stderr : nullptr;
  if (options.samples < 1 || options.validation_samples < 1 ||
      options.epochs < 1 || options.search.random_draws < 1 ||
      options.threads < 1 || options.scaled_copies < 0) {
    std::fprintf(stderr,
                 "--imitation_samples, --imitation_validation, "
                 "--imitation_epochs, --teacher_draws and --teacher_threads "
                 "must be >= 1, --imitation_scaled_copies >= 0\n");
    return 2;
  }
  InssImitationTrainer trainer(&sampler, env_options, agent->get(), info,
                               options);
  auto epochs = trainer.Run();
  if (!epochs.ok()) return Fail(epochs);
  const InssImitationEpoch& last = epochs->back();
  double best = 0;
  for (const auto& e : *epochs) best = std::max(best, e.room_ratio);
  std::printf(
      "after %d epochs: loss %.4f, the actor's room %.3f of the teacher's "
      "(%.1f %% of validation states at >= 0.95); best %.3f\n",
      last.epoch, last.loss, last.room_ratio, 100 * last.at_95, best);
  if (!options.out_stem.empty()) {
    std::printf(
        "wrote %s.pt and %s-best.pt (each with its .pbtxt and "
        ".actor.binpb)\n",
        options.out_stem.c_str(), options.out_stem.c_str());
  }
  return 0;
}

// --export_actor: the planning weights of an older checkpoint.
int ExportActor(const std::string& path) {
  const std::string stem = MlpInssActor::Stem(path);
  if (std::filesystem::exists(stem + ".actor.binpb")) {
    std::fprintf(stderr, "%s.actor.binpb exists already\n", stem.c_str());
    return 2;
  }
  auto actor = TorchInssActor::Load(stem);
  if (!actor.ok()) return Fail(actor);
  if (absl::Status s = (*actor)->ExportWeights(stem); !s.ok()) return Fail(s);
  std::printf("wrote %s.actor.binpb\n", stem.c_str());
  return 0;
}

int Run(const std::string& command) {
  if (!absl::GetFlag(FLAGS_export_actor).empty()) {
    return ExportActor(absl::GetFlag(FLAGS_export_actor));
  }
  std::shared_ptr<const InssActor> evaluated;
  const std::string evaluate = absl::GetFlag(FLAGS_evaluate);
  if (!evaluate.empty() && evaluate != "round-robin") {
    auto actor = TorchInssActor::Load(evaluate);
    if (!actor.ok()) return Fail(actor);
    evaluated = *actor;
  }
  const int gpus =
      evaluated ? evaluated->info().gpus() : absl::GetFlag(FLAGS_gpus);
  auto factors = SloFactors();
  if (!factors.ok()) return Fail(factors);
  auto pool = LoadPool(gpus, factors->empty() ? 5 : factors->front());
  if (!pool.ok()) return Fail(pool);
  if (evaluated) {
    pool->models.assign(evaluated->info().models().begin(),
                        evaluated->info().models().end());
  }
  InssCheckpointInfo info =
      MakeInssInfo(pool->profile_key, pool->models,
                   evaluated ? evaluated->info().max_models()
                             : absl::GetFlag(FLAGS_max_models),
                   gpus);
  info.set_hidden1_size(absl::GetFlag(FLAGS_hidden1));
  info.set_hidden2_size(absl::GetFlag(FLAGS_hidden2));
  info.set_seed(absl::GetFlag(FLAGS_seed));
  info.set_command(command);
  info.set_planning_rules(DescribeRules(pool->policy.rules));
  const std::string judge_name = absl::GetFlag(FLAGS_judge);
  if (judge_name != "simulator" && judge_name != "latency-model") {
    std::fprintf(stderr, "--judge must be simulator or latency-model\n");
    return 2;
  }
  const SimulatedInssJudge judge(pool->truth(),
                                 SimulatedInssJudge::StepOptions());
  auto env_options =
      EnvironmentOptions(judge_name == "simulator" ? &judge : nullptr);
  if (!env_options.ok()) return Fail(env_options);
  for (double f : env_options->slo_factors) info.add_slo_factors(f);
  info.set_judge(judge_name);
  info.set_headroom_weight(env_options->headroom_weight);
  info.set_headroom_cap(env_options->headroom_cap);
  auto sampler_options = SamplerOptions(info);
  if (!sampler_options.ok()) return Fail(sampler_options);
  info.set_min_gpus(sampler_options->min_gpus);
  info.set_min_models(sampler_options->min_models);
  info.set_max_models_per_gpu(sampler_options->max_models_per_gpu);
  info.set_max_load_fraction(env_options->max_rate_fraction);
  for (const std::string& k : sampler_options->held_out) info.add_held_out(k);
  auto sampler = InssWorkloadSampler::Create(pool->snapshot, pool->policy, info,
                                             *sampler_options);
  if (!sampler.ok()) return Fail(sampler);
  if (evaluate == "round-robin") {
    return Evaluate(*sampler, *env_options, RoundRobinActor(info));
  }
  if (evaluated) return Evaluate(*sampler, *env_options, *evaluated);
  const std::string teacher = absl::GetFlag(FLAGS_teacher);
  if (teacher == "search") {
    if (absl::GetFlag(FLAGS_resume)) {
      std::fprintf(stderr,
                   "--resume goes on with a SAC run; a --teacher=search run "
                   "keeps no training state (run it again)\n");
      return 2;
    }
    return Imitate(*sampler, *env_options, info);
  }
  if (teacher != "sac") {
    std::fprintf(stderr, "--teacher must be sac or search\n");
    return 2;
  }
  return Train(*sampler, *env_options, info);
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Trains InSS's SAC-Discrete actor offline in a simulator driven by "
      "InSS's latency model, with the paper's Table 1 hyper-parameters by "
      "default: one actor for 1..--gpus devices and up to --max_models "
      "instances of --models, episodes drawing the device count, the "
      "model mix (never a --held_out one), the rates and the SLO factor. "
      "Writes a checkpoint for --policy=inss, a reward-curve CSV, periodic "
      "checkpoints and a training state --resume goes on from.\n"
      "The shipped learner/checkpoints/inss_v100 (docs/scheduling.md):\n"
      "  tessera_inss_train --discount=0 --reward_scale=0.1 "
      "--out=/tmp/inss/inss_v100 --csv=/tmp/inss/training.csv   (stop any "
      "time; add --resume to go on; then ship the .pbtxt and .actor.binpb of "
      "/tmp/inss/inss_v100-best)\n"
      "With --teacher=search (a Tessera addition) the actor imitates the "
      "placements a search finds instead; the shipped "
      "learner/checkpoints/inss_v100_search (the -best of):\n"
      "  tessera_inss_train --teacher=search --imitation_samples=60000 "
      "--imitation_validation=600 --imitation_epochs=60 "
      "--learning_rate=0.001 --rules_override='inss { queueing_tail: 0.005 }' "
      "--out=/tmp/inss/inss_v100_search --csv=/tmp/inss/search.csv (the "
      "override: the fill-wait tail it was trained under)\n"
      "Baseline: tessera_inss_train --evaluate=round-robin");
  const std::vector<std::string> args(argv, argv + argc);
  absl::ParseCommandLine(argc, argv);
  return tessera::Run(absl::StrJoin(args, " "));
}
