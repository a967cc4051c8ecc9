#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"

namespace tessera {

// Hyper-parameters of InSS's SAC-Discrete agent; defaults are the paper's
// Table 1 (seeds/digests/inss.md Sec. 3.3) except the target entropy,
// which the paper prints as -log(1 + iota), a negative number a discrete
// policy's entropy can never fall to (pitfall 7): here it is
// target_entropy_ratio x log(options) per head (for a device head, the
// devices the state has), the SAC-Discrete paper's form (its ratio 0.98;
// tessera_inss_train uses 0.5).
struct SacOptions {
  int state_size = 0;
  int slots = 0;   // I: models
  int gpus = 0;    // K: options of a device head
  int levels = 0;  // U: options of a share head
  int hidden1_size = 512;
  int hidden2_size = 256;
  double q_learning_rate = 1e-4;
  double policy_learning_rate = 1e-4;
  double temperature_learning_rate = 1e-4;
  double discount = 0.99;          // gamma
  double target_smoothing = 0.01;  // kappa
  double initial_temperature = 1.0;
  double target_entropy_ratio = 0.98;
  // Where the state says which devices exist: device g exists when
  // state[device_offset + g * device_stride] > 0.5; its head's option is
  // masked otherwise, and the device heads' target entropy is the ratio
  // times log(devices that exist), per state. -1: every device exists.
  int device_offset = -1;
  int device_stride = 1;
  int replay_size = 10000;
  int minibatch_size = 100;
  uint64_t seed = 1;
  int threads = 1;
};

// The agent with the action encoding of InSS's code (digest pitfall 6): a
// shared trunk (state -> hidden1 -> hidden2, ReLU) and, per model slot, a
// device head (K-way softmax) and a share head (U-way softmax); each of
// the two critics (and their targets) outputs one Q-value per head option,
// and each head is trained against its own soft target with the shared
// reward (standard SAC-Discrete losses, pitfall 8), with its own
// temperature. Replay is uniform (the paper; the code weights by TD
// error). The torch parts are private to the .cc (the only torch
// translation unit of the learner). Not thread-safe.
class SacDiscreteAgent {
 public:
  struct UpdateStats {
    double q_loss = 0;
    double policy_loss = 0;
    double mean_temperature = 0;
    double mean_entropy = 0;  // per head, nats
  };

  static absl::StatusOr<std::unique_ptr<SacDiscreteAgent>> Create(
      const SacOptions& options);
  // An actor alone from a file SaveActor wrote, for planning: Act and
  // Probabilities only (Remember on it is a broken invariant; Update
  // returns nullopt).
  static absl::StatusOr<std::unique_ptr<SacDiscreteAgent>> LoadActor(
      const SacOptions& options, const std::string& path);
  // The same from weights ActorWeights() gave (INVALID_ARGUMENT when their
  // layers do not have the shape `options` describe).
  static absl::StatusOr<std::unique_ptr<SacDiscreteAgent>> LoadActor(
      const SacOptions& options, const InssActorWeights& weights);
  ~SacDiscreteAgent();

  // Per slot the device choice, then per slot the share-level index.
  // sample: draw from the heads; else argmax.
  std::vector<int> Act(const std::vector<float>& state, bool sample);
  // I K device probabilities then I U share probabilities. Thread-safe
  // for concurrent callers (no gradient, no state change).
  std::vector<float> Probabilities(const std::vector<float>& state) const;

  void Remember(const std::vector<float>& state, const std::vector<int>& action,
                double reward, const std::vector<float>& next_state);
  // One gradient step of critics, actor and temperatures, then the target
  // update; nullopt until the replay holds a minibatch.
  std::optional<UpdateStats> Update();

  // One supervised step of the actor alone, with its optimiser: the mean
  // cross-entropy of every head against `actions` (per state, I device
  // choices then I level indices, 0-based; -1: that head is not trained).
  // Critics and temperatures are untouched. For tessera_inss_train
  // --teacher=search (a Tessera addition: the actor imitates a search's
  // placements). Returns the loss before the step.
  double Imitate(const std::vector<std::vector<float>>& states,
                 const std::vector<std::vector<int>>& actions);

  absl::Status SaveActor(const std::string& path) const;
  // The actor's layers as the torch-free actor reads them
  // (scheduler/mlp_inss_actor.h), and written in the binary wire format.
  InssActorWeights ActorWeights() const;
  absl::Status SaveActorWeights(const std::string& path) const;
  // Everything training needs to go on where it stopped: the networks,
  // targets, temperatures, optimiser states, the replay ring and torch's
  // random generator. LoadTraining restores them into an agent created
  // with the same options (INVALID_ARGUMENT naming the file otherwise).
  absl::Status SaveTraining(const std::string& path) const;
  absl::Status LoadTraining(const std::string& path);
  // Transitions in the replay and the one at `index` (tests).
  int replay_count() const;
  std::vector<float> ReplayState(int index) const;

 private:
  struct Impl;
  explicit SacDiscreteAgent(std::unique_ptr<Impl> impl);
  // The actor network of valid `options`, untrained and without critics:
  // what both LoadActor overloads fill.
  static std::unique_ptr<Impl> PlanningImpl(const SacOptions& options);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
