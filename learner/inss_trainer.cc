#include "learner/inss_trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/progress_bar.h"
#include "common/status_macros.h"
#include "common/text_proto.h"

namespace tessera {
namespace {

// `done` of this run's `total` episodes; the ETA from this run's pace
// (`seconds` in all, `earlier` of them before this run).
void PrintProgress(std::FILE* out, int done, int total, int episode,
                   int episodes, double seconds, double earlier,
                   const InssEpisodeRecord& last_eval) {
  if (out == nullptr) return;
  const double pace = done > 0 ? (seconds - earlier) / done : 0;
  const double eta = pace * (total - done);
  std::fprintf(out,
               "\r%s episode %d/%d  eval reward %.2f  viol %.2f%%  "
               "%.0fs, eta %.0fs   ",
               ProgressBar(episode, episodes).c_str(), episode, episodes,
               last_eval.mean_reward, last_eval.violation_pct, seconds, eta);
  std::fflush(out);
}

}  // namespace

namespace {

// Runs `episodes` deterministic episodes of a copy of `like` seeded with
// `seed`, `act` choosing the actions.
template <typename Act>
InssEpisodeRecord RunEvaluation(const InssEnvironment& like, int episodes,
                                uint64_t seed, Act act) {
  InssEnvironment env = like;
  env.Reseed(seed);
  InssEpisodeRecord r;
  r.evaluation = true;
  int steps = 0;
  double violation = 0;
  for (int e = 0; e < episodes; ++e) {
    std::vector<float> state = env.Reset();
    for (bool done = false; !done;) {
      const InssEnvironment::Step step = env.Apply(act(env, state));
      r.mean_reward += step.reward;
      r.mean_capacity += step.capacity_sum;
      violation += step.violation_fraction;
      ++steps;
      state = step.state;
      done = step.done;
    }
  }
  if (steps > 0) {
    r.mean_reward /= steps;
    r.mean_capacity /= steps;
    r.violation_pct = 100 * violation / steps;
  }
  return r;
}

}  // namespace

InssEpisodeRecord InssTrainer::Evaluate(const InssEnvironment& like,
                                        SacDiscreteAgent* agent, int episodes,
                                        uint64_t seed) {
  return RunEvaluation(
      like, episodes, seed,
      [&](const InssEnvironment&, const std::vector<float>& state) {
        return agent->Act(state, /*sample=*/false);
      });
}

absl::StatusOr<InssEpisodeRecord> InssTrainer::Evaluate(
    const InssEnvironment& like, const InssActor& actor, int episodes,
    uint64_t seed) {
  const int n = actor.info().max_models();
  const int heads = actor.info().gpus();
  const int u = actor.info().share_units();
  absl::Status error;
  InssEpisodeRecord r = RunEvaluation(
      like, episodes, seed,
      [&](const InssEnvironment& env, const std::vector<float>& state) {
        std::vector<int> action(2 * n, 0);
        auto probs = actor.Probabilities(state);
        if (!probs.ok()) {
          error = probs.status();
          return action;
        }
        const int k = env.cluster().gpus();
        for (int i = 0; i < n; ++i) {
          const float* g = probs->data() + i * heads;
          const float* l = probs->data() + n * heads + i * u;
          action[i] = static_cast<int>(std::max_element(g, g + k) - g);
          action[n + i] = static_cast<int>(std::max_element(l, l + u) - l);
        }
        return action;
      });
  if (!error.ok()) return error;
  return r;
}

absl::Status InssTrainer::Save(const std::string& stem, int episodes,
                               double eval_reward) const {
  InssCheckpointInfo info = info_;
  info.set_episodes_trained(episodes);
  info.set_steps_trained(state_.steps());
  info.set_final_eval_reward(eval_reward);
  RETURN_IF_ERROR(agent_->SaveActor(stem + ".pt"));
  RETURN_IF_ERROR(agent_->SaveActorWeights(stem + ".actor.binpb"));
  RETURN_IF_ERROR(WriteTextProto(stem + ".pbtxt", info));
  Wrote(stem);
  return absl::OkStatus();
}

void InssTrainer::Wrote(const std::string& stem) const {
  if (std::find(written_.begin(), written_.end(), stem) == written_.end()) {
    written_.push_back(stem);
  }
}

absl::Status InssTrainer::SaveResume() const {
  const std::string stem = options_.out_stem + "-resume";
  // The agent first: a state file never names a missing agent file.
  RETURN_IF_ERROR(agent_->SaveTraining(stem + ".pt.tmp"));
  std::filesystem::rename(stem + ".pt.tmp", stem + ".pt");
  InssTrainingState state = state_;
  state.set_environment_rng(env_->RngState());
  state.set_planning_rules(info_.planning_rules());
  RETURN_IF_ERROR(WriteTextProto(stem + ".pbtxt", state));
  Wrote(stem);
  return absl::OkStatus();
}

absl::Status InssTrainer::LoadResume() {
  const std::string stem = options_.out_stem + "-resume";
  RETURN_IF_ERROR(ReadTextProto(stem + ".pbtxt", &state_));
  if (state_.planning_rules() != info_.planning_rules()) {
    return absl::FailedPreconditionError(absl::StrCat(
        stem, ".pbtxt was trained under the planning rules '",
        state_.planning_rules(), "', this run plans under '",
        info_.planning_rules(),
        "': the replay's rewards would not be this run's (pass the "
        "same --rules and --rules_override, or start afresh)"));
  }
  RETURN_IF_ERROR(agent_->LoadTraining(stem + ".pt"));
  return env_->SetRngState(state_.environment_rng());
}

bool InssTrainer::Plateaued() const {
  const int n = state_.eval_rewards_size();
  const int window = options_.plateau_evals;
  if (window <= 0 || n <= window) return false;
  double before = -std::numeric_limits<double>::infinity();
  double recent = before;
  for (int i = 0; i < n; ++i) {
    double& best = i < n - window ? before : recent;
    best = std::max(best, state_.eval_rewards(i));
  }
  return recent <= before + options_.plateau_tolerance * std::abs(before);
}

absl::StatusOr<std::vector<InssEpisodeRecord>> InssTrainer::Run() {
  if (options_.resume) {
    if (options_.out_stem.empty()) {
      return absl::InvalidArgumentError("resuming needs the checkpoint stem");
    }
    RETURN_IF_ERROR(LoadResume());
  } else {
    state_ = InssTrainingState();
    state_.set_best_eval_reward(-std::numeric_limits<double>::infinity());
  }
  std::ofstream csv;
  if (!options_.csv_path.empty()) {
    const bool append = options_.resume && state_.episode() > 0;
    csv.open(options_.csv_path, append ? std::ios::app : std::ios::trunc);
    if (!csv) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write ", options_.csv_path));
    }
    if (!append) {
      csv << "episode,evaluation,mean_reward,violation_pct,mean_capacity,"
             "temperature,entropy,q_loss,seconds\n";
    }
  }
  std::vector<InssEpisodeRecord> records;
  const double earlier = state_.seconds();
  const absl::Time start = absl::Now() - absl::Seconds(earlier);
  InssEpisodeRecord last_eval;
  if (state_.eval_rewards_size() > 0) {
    last_eval.mean_reward = state_.eval_rewards(state_.eval_rewards_size() - 1);
  }
  SacDiscreteAgent::UpdateStats stats;
  const int first = state_.episode() + 1;
  int episode = first;
  for (; episode <= options_.episodes && !Plateaued(); ++episode) {
    InssEpisodeRecord r;
    if (options_.eval_every > 0 && episode % options_.eval_every == 0) {
      r = Evaluate(*env_, agent_, options_.eval_episodes, options_.eval_seed);
      last_eval = r;
      state_.add_eval_rewards(r.mean_reward);
      if (r.mean_reward > state_.best_eval_reward()) {
        state_.set_best_eval_reward(r.mean_reward);
        if (!options_.out_stem.empty()) {
          RETURN_IF_ERROR(
              Save(options_.out_stem + "-best", episode, r.mean_reward));
        }
      }
    } else {
      std::vector<float> state = env_->Reset();
      int steps = 0, updates = 0;
      for (bool done = false; !done;) {
        const std::vector<int> action = agent_->Act(state, /*sample=*/true);
        const InssEnvironment::Step step = env_->Apply(action);
        agent_->Remember(state, action, options_.reward_scale * step.reward,
                         step.state);
        if (auto s = agent_->Update(); s.has_value()) {
          stats = *s;
          r.q_loss += s->q_loss;
          ++updates;
        }
        r.mean_reward += step.reward;
        r.mean_capacity += step.capacity_sum;
        r.violation_pct += 100 * step.violation_fraction;
        ++steps;
        state = step.state;
        done = step.done;
      }
      state_.set_steps(state_.steps() + steps);
      r.mean_reward /= steps;
      r.mean_capacity /= steps;
      r.violation_pct /= steps;
      if (updates > 0) r.q_loss /= updates;
    }
    r.episode = episode;
    r.temperature = stats.mean_temperature;
    r.entropy = stats.mean_entropy;
    r.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    state_.set_episode(episode);
    state_.set_seconds(r.seconds);
    records.push_back(r);
    if (csv.is_open()) {
      csv << absl::StrFormat("%d,%d,%.6f,%.4f,%.6f,%.6f,%.6f,%.6f,%.2f\n",
                             r.episode, r.evaluation ? 1 : 0, r.mean_reward,
                             r.violation_pct, r.mean_capacity, r.temperature,
                             r.entropy, r.q_loss, r.seconds);
      csv.flush();
    }
    PrintProgress(options_.progress, episode - first + 1,
                  options_.episodes - first + 1, episode, options_.episodes,
                  r.seconds, earlier, last_eval);
    if (!options_.out_stem.empty() && options_.checkpoint_every > 0 &&
        episode % options_.checkpoint_every == 0) {
      RETURN_IF_ERROR(Save(absl::StrCat(options_.out_stem, "-e", episode),
                           episode, last_eval.mean_reward));
    }
    if (!options_.out_stem.empty() && options_.resume_every > 0 &&
        episode % options_.resume_every == 0) {
      RETURN_IF_ERROR(SaveResume());
    }
  }
  if (options_.progress != nullptr) {
    std::fprintf(options_.progress, "\n%s\n",
                 Plateaued() ? "stopped: the evaluations reached a plateau"
                             : "stopped: the episode budget is spent");
  }
  if (!options_.out_stem.empty()) {
    RETURN_IF_ERROR(
        Save(options_.out_stem, state_.episode(), last_eval.mean_reward));
    RETURN_IF_ERROR(SaveResume());
  }
  return records;
}

}  // namespace tessera
