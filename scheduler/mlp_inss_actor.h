#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "scheduler/inss_actor.h"

namespace tessera {

// InSS's actor network without LibTorch: the trained MLP (state -> two
// ReLU layers -> I K device logits and I U share-level logits), the
// devices a state lacks masked out of the device heads, a softmax per
// head; the same arithmetic as the learner's network, in plain C++, so
// that the frontend and the simulator plan with InSS without linking
// LibTorch. Immutable; thread-safe.
class MlpInssActor final : public InssActor {
 public:
  // "<stem>.pbtxt" (InssCheckpointInfo) and "<stem>.actor.binpb"
  // (InssActorWeights); `path` may name either file or the stem. Fails,
  // naming the file, when the layers do not match the info's shape.
  static absl::StatusOr<std::shared_ptr<const MlpInssActor>> Load(
      const std::string& path);
  // Load(path); an empty `path` names the checkpoint shipped with the
  // source tree (learner/checkpoints/inss_v100) where the build found it,
  // else relative to the working directory (an installed tree such as the
  // docker image's /opt/tessera).
  static absl::StatusOr<std::shared_ptr<const MlpInssActor>> LoadOrShipped(
      const std::string& path);
  // An actor from weights in memory, checked as Load checks them.
  static absl::StatusOr<std::shared_ptr<const MlpInssActor>> Create(
      InssCheckpointInfo info, InssActorWeights weights);
  // An untrained actor of `info`'s shape: each layer's weights and biases
  // uniform in +-1/sqrt(inputs) (torch::nn::Linear's initialisation) from
  // `seed`. Planning-time measurements use it for shapes no checkpoint
  // was trained for.
  static absl::StatusOr<std::shared_ptr<const MlpInssActor>> Untrained(
      InssCheckpointInfo info, uint64_t seed);

  // The checkpoint stem of `path` (without ".pt", ".pbtxt" or
  // ".actor.binpb").
  static std::string Stem(const std::string& path);
  // "<stem>.pbtxt", its state size checked against its model slots and
  // devices; and "<stem>.actor.binpb" (NOT_FOUND when absent). The
  // learner's LibTorch actor reads checkpoints with them too.
  static absl::StatusOr<InssCheckpointInfo> ReadInfo(const std::string& stem);
  static absl::StatusOr<InssActorWeights> ReadWeights(const std::string& stem);

  const InssCheckpointInfo& info() const override { return info_; }
  absl::StatusOr<std::vector<float>> Probabilities(
      const std::vector<float>& state) const override;

 private:
  MlpInssActor(InssCheckpointInfo info, InssActorWeights weights)
      : info_(std::move(info)), weights_(std::move(weights)) {}

  const InssCheckpointInfo info_;
  const InssActorWeights weights_;
};

}  // namespace tessera
