#include "learner/inss_trainer.h"

#include <algorithm>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/text_proto.h"

namespace tessera {
namespace {

void ProgressBar(std::FILE* out, int done, int total, double seconds,
                 const InssEpisodeRecord& last_eval) {
  if (out == nullptr) return;
  constexpr int kWidth = 30;
  const int filled = total > 0 ? kWidth * done / total : kWidth;
  const double eta = done > 0 ? seconds * (total - done) / done : 0;
  std::fprintf(out,
               "\r[%s%s] episode %d/%d  eval reward %.2f  viol %.2f%%  "
               "%.0fs, eta %.0fs   ",
               std::string(filled, '#').c_str(),
               std::string(kWidth - filled, ' ').c_str(), done, total,
               last_eval.mean_reward, last_eval.violation_pct, seconds, eta);
  std::fflush(out);
}

}  // namespace

namespace {

// Runs `episodes` deterministic episodes with `act` choosing the actions.
template <typename Act>
InssEpisodeRecord RunEvaluation(const InssCluster& cluster,
                                const InssEnvironmentOptions& env_options,
                                int episodes, uint64_t seed, Act act) {
  InssEnvironment env(cluster, env_options, seed);
  InssEpisodeRecord r;
  r.evaluation = true;
  int steps = 0;
  double violation = 0;
  for (int e = 0; e < episodes; ++e) {
    std::vector<float> state = env.Reset();
    for (bool done = false; !done;) {
      const InssEnvironment::Step step = env.Apply(act(state));
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

InssEpisodeRecord InssTrainer::Evaluate(
    const InssCluster& cluster, const InssEnvironmentOptions& env_options,
    SacDiscreteAgent* agent, int episodes, uint64_t seed) {
  return RunEvaluation(cluster, env_options, episodes, seed,
                       [&](const std::vector<float>& state) {
                         return agent->Act(state, /*sample=*/false);
                       });
}

absl::StatusOr<InssEpisodeRecord> InssTrainer::Evaluate(
    const InssCluster& cluster, const InssEnvironmentOptions& env_options,
    const InssActor& actor, int episodes, uint64_t seed) {
  const int n = actor.info().models_size();
  const int k = actor.info().gpus();
  const int u = actor.info().share_units();
  absl::Status error;
  InssEpisodeRecord r = RunEvaluation(
      cluster, env_options, episodes, seed,
      [&](const std::vector<float>& state) {
        std::vector<int> action(2 * n, 0);
        auto probs = actor.Probabilities(state);
        if (!probs.ok()) {
          error = probs.status();
          return action;
        }
        for (int i = 0; i < n; ++i) {
          const float* g = probs->data() + i * k;
          const float* l = probs->data() + n * k + i * u;
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
  info.set_final_eval_reward(eval_reward);
  if (auto s = agent_->SaveActor(stem + ".pt"); !s.ok()) return s;
  return WriteTextProto(stem + ".pbtxt", info);
}

absl::StatusOr<std::vector<InssEpisodeRecord>> InssTrainer::Run() {
  std::ofstream csv;
  if (!options_.csv_path.empty()) {
    csv.open(options_.csv_path);
    if (!csv) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write ", options_.csv_path));
    }
    csv << "episode,evaluation,mean_reward,violation_pct,mean_capacity,"
           "temperature,entropy,q_loss,seconds\n";
  }
  std::vector<InssEpisodeRecord> records;
  const absl::Time start = absl::Now();
  InssEpisodeRecord last_eval;
  double best_reward = -std::numeric_limits<double>::infinity();
  SacDiscreteAgent::UpdateStats stats;
  for (int episode = 1; episode <= options_.episodes; ++episode) {
    InssEpisodeRecord r;
    if (options_.eval_every > 0 && episode % options_.eval_every == 0) {
      r = Evaluate(env_->cluster(), env_->options(), agent_,
                   options_.eval_episodes, options_.eval_seed);
      last_eval = r;
      if (!options_.out_stem.empty() && r.mean_reward > best_reward) {
        best_reward = r.mean_reward;
        auto s = Save(options_.out_stem + "-best", episode, r.mean_reward);
        if (!s.ok()) return s;
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
      r.mean_reward /= steps;
      r.mean_capacity /= steps;
      r.violation_pct /= steps;
      if (updates > 0) r.q_loss /= updates;
    }
    r.episode = episode;
    r.temperature = stats.mean_temperature;
    r.entropy = stats.mean_entropy;
    r.seconds = absl::ToDoubleSeconds(absl::Now() - start);
    records.push_back(r);
    if (csv.is_open()) {
      csv << absl::StrFormat("%d,%d,%.6f,%.4f,%.6f,%.6f,%.6f,%.6f,%.2f\n",
                             r.episode, r.evaluation ? 1 : 0, r.mean_reward,
                             r.violation_pct, r.mean_capacity, r.temperature,
                             r.entropy, r.q_loss, r.seconds);
      csv.flush();
    }
    ProgressBar(options_.progress, episode, options_.episodes, r.seconds,
                last_eval);
    if (!options_.out_stem.empty() && options_.checkpoint_every > 0 &&
        episode % options_.checkpoint_every == 0) {
      auto s = Save(absl::StrCat(options_.out_stem, "-e", episode), episode,
                    last_eval.mean_reward);
      if (!s.ok()) return s;
    }
  }
  if (options_.progress != nullptr) std::fprintf(options_.progress, "\n");
  if (!options_.out_stem.empty()) {
    auto s = Save(options_.out_stem, options_.episodes, last_eval.mean_reward);
    if (!s.ok()) return s;
  }
  return records;
}

}  // namespace tessera
