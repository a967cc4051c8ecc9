#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "learner/sac_discrete_agent.h"
#include "scheduler/inss_actor.h"

namespace tessera {

// InssActor backed by a SacDiscreteAgent's actor network.
class TorchInssActor : public InssActor {
 public:
  // Loads the InssCheckpointInfo "<stem>.pbtxt" and the actor beside it:
  // "<stem>.actor.binpb" (InssActorWeights) if present, else "<stem>.pt"
  // (`path` may name any of them or the stem). Errors name the file.
  static absl::StatusOr<std::shared_ptr<const TorchInssActor>> Load(
      const std::string& path);
  // An untrained actor of the checkpoint's shape (random weights, seeded):
  // for planning-time measurements and tests of the plumbing.
  static absl::StatusOr<std::shared_ptr<const TorchInssActor>> Untrained(
      const InssCheckpointInfo& info, uint64_t seed);

  // The network options a checkpoint describes.
  static SacOptions NetworkOptions(const InssCheckpointInfo& info);

  // Writes the actor's weights for the torch-free actor to
  // "<stem>.actor.binpb" (what --export_actor does for a checkpoint).
  absl::Status ExportWeights(const std::string& stem) const {
    return agent_->SaveActorWeights(stem + ".actor.binpb");
  }

  const InssCheckpointInfo& info() const override { return info_; }
  absl::StatusOr<std::vector<float>> Probabilities(
      const std::vector<float>& state) const override;

 private:
  TorchInssActor(InssCheckpointInfo info,
                 std::unique_ptr<SacDiscreteAgent> agent)
      : info_(std::move(info)), agent_(std::move(agent)) {}
  InssCheckpointInfo info_;
  std::unique_ptr<SacDiscreteAgent> agent_;
};

}  // namespace tessera
