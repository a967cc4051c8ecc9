#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "learner/sac_discrete_agent.h"
#include "scheduler/inss_actor.h"
#include "scheduler/inss_environment.h"

namespace tessera {

// Offline training of InSS's actor (Alg. 2): per step the agent samples an
// action, the environment applies it (repair + BDA + one simulated
// second), the transition goes to the replay and the agent takes one
// gradient step. Every `eval_every`-th episode is a deterministic (argmax)
// evaluation on fixed seeds instead, as InSS's code does, so the reward
// curve has a noise-free series. Writes a CSV row per episode, actor
// checkpoints every `checkpoint_every` episodes and at the end
// ("<stem>"), and the actor of the best evaluation so far
// ("<stem>-best", as InSS's code keeps the actors that meet the SLO:
// SAC's evaluations rise and fall), each with its InssCheckpointInfo.
// Every `resume_every` episodes (and at the end) it also writes the whole
// training state ("<stem>-resume.pt" and ".pbtxt"), from which a later
// run with `resume` goes on: same replay, optimisers, generators and
// episode count, the CSV appended to.
// Plateau criterion (`plateau_evals` > 0): training stops early when the
// best evaluation of the last `plateau_evals` evaluations is not above
// the best before them by more than `plateau_tolerance` x |that best|.
struct InssTrainerOptions {
  int episodes = 1500;
  int eval_every = 4;
  int eval_episodes = 4;
  uint64_t eval_seed = 1000003;
  int checkpoint_every = 100;
  // "<stem>.pt" / "<stem>.pbtxt"; checkpoints "<stem>-e<episode>.*".
  std::string out_stem;
  std::string csv_path;  // empty: none
  // Multiplies the reward stored in the replay (the curve and evaluations
  // stay in Eq. 3's units). The paper normalises its reward without
  // saying how (digest pitfall 9); tessera_inss_train's --reward_scale
  // says what was measured.
  double reward_scale = 1;
  // Progress bar on this stream (null: quiet).
  std::FILE* progress = nullptr;
  int resume_every = 25;
  bool resume = false;
  int plateau_evals = 0;
  double plateau_tolerance = 0.01;
};

struct InssEpisodeRecord {
  int episode = 0;
  bool evaluation = false;
  double mean_reward = 0;    // per step
  double violation_pct = 0;  // of all tasks of the episode
  double mean_capacity = 0;  // sum c_i / H_i, per step
  double temperature = 0;    // mean over heads, end of episode
  double entropy = 0;        // nats per head
  double q_loss = 0;         // mean over the episode's updates
  double seconds = 0;        // wall time since the start
};

class InssTrainer {
 public:
  // `info` describes the network (models, gpus, units, sizes); the
  // trainer fills in the provenance fields when it saves.
  InssTrainer(InssEnvironment* env, SacDiscreteAgent* agent,
              InssCheckpointInfo info, InssTrainerOptions options)
      : env_(env),
        agent_(agent),
        info_(std::move(info)),
        options_(std::move(options)) {}

  // The episodes run by this call (a resumed run: those after the
  // saved episode).
  absl::StatusOr<std::vector<InssEpisodeRecord>> Run();
  // Where the run stands (after Run: where it stopped).
  const InssTrainingState& state() const { return state_; }

  // Mean per-step reward and violation % of the deterministic policy over
  // `episodes` episodes of a copy of `like` seeded with `seed`.
  static InssEpisodeRecord Evaluate(const InssEnvironment& like,
                                    SacDiscreteAgent* agent, int episodes,
                                    uint64_t seed);
  // The same for a loaded actor (argmax of every head, devices the
  // cluster lacks never picked).
  static absl::StatusOr<InssEpisodeRecord> Evaluate(const InssEnvironment& like,
                                                    const InssActor& actor,
                                                    int episodes,
                                                    uint64_t seed);

  absl::Status Save(const std::string& stem, int episodes,
                    double eval_reward) const;
  // The stems written so far (each as <stem>.pt and <stem>.pbtxt), in
  // order, each once.
  const std::vector<std::string>& written() const { return written_; }

 private:
  InssEnvironment* env_;
  SacDiscreteAgent* agent_;
  absl::Status SaveResume() const;
  absl::Status LoadResume();
  bool Plateaued() const;

  InssCheckpointInfo info_;
  InssTrainerOptions options_;
  InssTrainingState state_;
  mutable std::vector<std::string> written_;
  // Records `stem` in written_ once.
  void Wrote(const std::string& stem) const;
};

}  // namespace tessera
