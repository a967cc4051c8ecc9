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
  // Loads "<stem>.pt" and the InssCheckpointInfo "<stem>.pbtxt" beside it
  // (`path` may name either or the stem). Errors name the file.
  static absl::StatusOr<std::shared_ptr<const TorchInssActor>> Load(
      const std::string& path);
  // An untrained actor of the checkpoint's shape (random weights, seeded):
  // for planning-time measurements and tests of the plumbing.
  static absl::StatusOr<std::shared_ptr<const TorchInssActor>> Untrained(
      const InssCheckpointInfo& info, uint64_t seed);

  // The network options a checkpoint describes.
  static SacOptions NetworkOptions(const InssCheckpointInfo& info);
  // "<stem>.pt" / "<stem>.pbtxt" for a path naming either or the stem.
  static std::string Stem(const std::string& path);

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
