#include "learner/inss_imitation_trainer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/owned_threads.h"
#include "common/progress_bar.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "scheduler/inss_provisioning.h"

namespace tessera {
namespace {

// The environment's flat action for the teacher's choice (slots without
// traffic: device 0, level 1; FromAction leaves them out).
std::vector<int> FlatAction(const InssPlacementSearch::Result& r) {
  const size_t n = r.gpu.size();
  std::vector<int> flat(2 * n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (r.gpu[i] < 0) continue;
    flat[i] = r.gpu[i];
    flat[n + i] = r.level[i] - 1;
  }
  return flat;
}

// The imitation target: the flat action with -1 where nothing is trained.
std::vector<int> Target(const InssPlacementSearch::Result& r) {
  std::vector<int> target = FlatAction(r);
  const size_t n = r.gpu.size();
  for (size_t i = 0; i < n; ++i) {
    if (r.gpu[i] < 0) target[i] = target[n + i] = -1;
  }
  return target;
}

// The geometric mean of room ratios (a 0 counts as 0.001); 0 for none.
double GeometricMean(const std::vector<double>& ratios) {
  if (ratios.empty()) return 0;
  double log_sum = 0;
  for (double x : ratios) log_sum += std::log(std::max(x, 1e-3));
  return std::exp(log_sum / ratios.size());
}

void Progress(std::FILE* out, const std::string& what, int done, int total,
              double seconds) {
  if (out == nullptr) return;
  const double eta = done > 0 ? seconds / done * (total - done) : 0;
  std::fprintf(out, "\r%s %s %d/%d  %.0fs, eta %.0fs   ",
               ProgressBar(done, total).c_str(), what.c_str(), done, total,
               seconds, eta);
  std::fflush(out);
}

}  // namespace

std::vector<InssImitationTrainer::Sample> InssImitationTrainer::GenerateOne(
    int count, uint64_t seed, std::atomic<int>* done) const {
  InssEnvironment env(sampler_, env_options_, seed);
  std::vector<Sample> out;
  out.reserve(count);
  // One seed for every state: similar states then start the local search
  // from the same draws and end at similar optima, so the actor is shown
  // one answer where several tie.
  const InssSearchOptions& search = options_.search;
  while (static_cast<int>(out.size()) < count) {
    std::vector<float> state = env.Reset();
    for (int k = 0; k < options_.samples_per_episode &&
                    static_cast<int>(out.size()) < count;
         ++k) {
      const InssPlacementSearch::Result r =
          InssPlacementSearch::Search(env.cluster(), env.rates_rps(), search);
      out.push_back(Sample{state, Target(r), env.cluster(), env.rates_rps(),
                           r.room, /*fresh=*/k == 0});
      done->fetch_add(1);
      const std::vector<int> flat = FlatAction(r);
      for (int s = 0; s < options_.steps_between; ++s) {
        InssEnvironment::Step step = env.Apply(flat);
        state = std::move(step.state);
        if (step.done) break;
      }
    }
  }
  return out;
}

std::vector<InssImitationTrainer::Sample> InssImitationTrainer::Generate(
    int count, uint64_t seed, int threads) const {
  threads = std::max(1, std::min(threads, count));
  std::vector<std::vector<Sample>> parts(threads);
  std::atomic<int> done{0};
  OwnedThreads workers;
  for (int t = 0; t < threads; ++t) {
    const int share = count / threads + (t < count % threads ? 1 : 0);
    workers.Start([this, &parts, &done, t, share, seed] {
      parts[t] = GenerateOne(share, seed + t, &done);
    });
  }
  // The workers always finish (each draws exactly its share).
  const absl::Time start = absl::Now();
  while (options_.progress != nullptr && done.load() < count) {
    absl::SleepFor(absl::Seconds(1));
    Progress(options_.progress, "states", done.load(), count,
             absl::ToDoubleSeconds(absl::Now() - start));
  }
  workers.JoinAll();
  if (options_.progress != nullptr) std::fprintf(options_.progress, "\n");
  std::vector<Sample> all;
  for (auto& part : parts) {
    for (Sample& s : part) all.push_back(std::move(s));
  }
  return all;
}

void InssImitationTrainer::AddScaledCopies(std::vector<Sample>* samples) const {
  std::mt19937_64 rng(options_.seed ^ 0x5ca1eULL);
  const size_t drawn = samples->size();
  for (size_t k = 0; k < drawn; ++k) {
    const Sample s = (*samples)[k];
    if (!s.fresh || s.teacher_room <= 0) continue;
    const int n = static_cast<int>(s.rates_rps.size());
    const InssProvisioning none{std::vector<int>(n, -1),
                                std::vector<double>(n, 0)};
    // Rates times m leave room / m: copies with 1 to 8 times room left.
    std::uniform_real_distribution<double> log_scale(
        std::log(s.teacher_room / 8), std::log(s.teacher_room));
    for (int c = 0; c < options_.scaled_copies; ++c) {
      Sample copy = s;
      const double m = std::exp(log_scale(rng));
      for (double& r : copy.rates_rps) r *= m;
      copy.state = InssEnvironment::EncodeState(
          copy.cluster, copy.rates_rps, std::vector<double>(n, 0), none);
      copy.teacher_room = s.teacher_room / m;
      copy.fresh = false;
      samples->push_back(std::move(copy));
    }
  }
}

std::vector<double> InssImitationTrainer::RoomRatios(
    const std::vector<Sample>& samples) const {
  std::vector<double> ratios;
  for (const Sample& s : samples) {
    if (s.teacher_room <= 0) continue;
    const std::vector<int> action = agent_->Act(s.state, /*sample=*/false);
    const InssProvisioning p =
        InssProvisioning::FromFlatAction(s.cluster, action, s.rates_rps);
    int evaluations = 0;
    const double room = InssPlacementSearch::Room(
        s.cluster, p, s.rates_rps, options_.search.room_cap, 0, &evaluations);
    ratios.push_back(room / s.teacher_room);
  }
  return ratios;
}

absl::Status InssImitationTrainer::Save(const std::string& stem,
                                        int epochs) const {
  InssCheckpointInfo info = info_;
  info.set_teacher("search");
  info.set_imitation_samples(options_.samples);
  info.set_teacher_random_draws(options_.search.random_draws);
  info.set_imitation_epochs(epochs);
  RETURN_IF_ERROR(agent_->SaveActor(stem + ".pt"));
  RETURN_IF_ERROR(agent_->SaveActorWeights(stem + ".actor.binpb"));
  return WriteTextProto(stem + ".pbtxt", info);
}

absl::StatusOr<std::vector<InssImitationEpoch>> InssImitationTrainer::Run() {
  const absl::Time start = absl::Now();
  auto elapsed = [&] { return absl::ToDoubleSeconds(absl::Now() - start); };
  if (options_.progress != nullptr) {
    std::fprintf(options_.progress,
                 "generating %d training and %d validation states "
                 "(the teacher: %d random draws and a local search each)\n",
                 options_.samples, options_.validation_samples,
                 options_.search.random_draws);
  }
  std::ofstream csv;
  if (!options_.csv_path.empty()) {
    csv.open(options_.csv_path);
    if (!csv) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot write '", options_.csv_path, "'"));
    }
    csv << "epoch,loss,room_ratio,at_95,train_room_ratio,seconds\n";
  }
  std::vector<Sample> train =
      Generate(options_.samples, options_.seed, options_.threads);
  const std::vector<Sample> validation = Generate(
      options_.validation_samples, options_.seed + 7919, options_.threads);
  if (options_.scaled_copies > 0) {
    AddScaledCopies(&train);
    if (options_.progress != nullptr) {
      std::fprintf(options_.progress,
                   "%zu states with the scaled copies of the first ones\n",
                   train.size());
    }
  }
  std::vector<int> order(train.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(options_.seed);
  std::vector<InssImitationEpoch> epochs;
  double best = -1;
  const double training_start = elapsed();
  for (int e = 1; e <= options_.epochs; ++e) {
    std::shuffle(order.begin(), order.end(), rng);
    double loss = 0;
    int steps = 0;
    for (size_t at = 0; at < order.size(); at += options_.minibatch) {
      std::vector<std::vector<float>> states;
      std::vector<std::vector<int>> actions;
      for (size_t j = at; j < std::min(order.size(), at + options_.minibatch);
           ++j) {
        states.push_back(train[order[j]].state);
        actions.push_back(train[order[j]].action);
      }
      loss += agent_->Imitate(states, actions);
      ++steps;
    }
    const std::vector<double> ratios = RoomRatios(validation);
    const std::vector<double> fitted = RoomRatios(std::vector<Sample>(
        train.begin(),
        train.begin() + std::min(train.size(), validation.size())));
    InssImitationEpoch r;
    r.epoch = e;
    r.loss = steps > 0 ? loss / steps : 0;
    r.room_ratio = GeometricMean(ratios);
    r.train_room_ratio = GeometricMean(fitted);
    const auto at_95 = std::count_if(ratios.begin(), ratios.end(),
                                     [](double x) { return x >= 0.95; });
    r.at_95 = ratios.empty() ? 0 : static_cast<double>(at_95) / ratios.size();
    r.seconds = elapsed();
    epochs.push_back(r);
    if (csv.is_open()) {
      csv << absl::StrFormat("%d,%.5f,%.4f,%.4f,%.4f,%.1f\n", r.epoch, r.loss,
                             r.room_ratio, r.at_95, r.train_room_ratio,
                             r.seconds);
      csv.flush();
    }
    if (!options_.out_stem.empty() && r.room_ratio > best) {
      best = r.room_ratio;
      RETURN_IF_ERROR(Save(options_.out_stem + "-best", e));
    }
    Progress(options_.progress,
             absl::StrFormat("epoch (loss %.3f, room %.3f of the teacher's)",
                             r.loss, r.room_ratio),
             e, options_.epochs, r.seconds - training_start);
  }
  if (options_.progress != nullptr) std::fprintf(options_.progress, "\n");
  if (!options_.out_stem.empty()) {
    RETURN_IF_ERROR(Save(options_.out_stem, options_.epochs));
  }
  return epochs;
}

}  // namespace tessera
