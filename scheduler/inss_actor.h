#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"

namespace tessera {

// InSS's trained actor network as the inss policy sees it: a state in, the
// action probabilities of every head out. The LibTorch implementation
// lives in learner/ (TorchInssActor); tests use hand-written ones.
// Implementations are immutable after construction and thread-safe.
class InssActor {
 public:
  virtual ~InssActor() = default;
  // What the network was trained for.
  virtual const InssCheckpointInfo& info() const = 0;
  // Per slot i, the device head's K probabilities, then per slot the
  // share-level head's U probabilities: I K + I U values.
  virtual absl::StatusOr<std::vector<float>> Probabilities(
      const std::vector<float>& state) const = 0;
};

}  // namespace tessera
