#pragma once

// Fits an Mlp to (features, latency) samples in plain C++: Tessera's
// group-latency predictor. The paper's network (3 hidden layers × 32, ReLU).
// Tessera's training differs from the artifact's in three named ways, with
// their measured effect in docs/abacus.md: inputs standardised (the
// artifact feeds raw operator indices and batch sizes), the target is
// ln(latency) (the error that matters is relative: MAPE), and Adam instead
// of SGD. ArtifactTraining() gives the artifact's recipe.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "overlap/mlp.h"

namespace tessera {

struct MlpSample {
  std::vector<float> features;
  double latency_ms = 0;
};

struct MlpTrainerOptions {
  int hidden_layers = 3;
  int hidden_width = 32;
  int epochs = 250;
  int batch_size = 128;
  double learning_rate = 0.003;  // cosine-decayed to 0
  uint64_t seed = 1;
  bool standardize_inputs = true;
  bool log_target = true;  // false: mean squared error on milliseconds
  bool adam = true;        // false: plain SGD
};

// The artifact's recipe: raw inputs, MSE on milliseconds, SGD at 0.001
// cosine-decayed, 250 epochs of batches of 128.
MlpTrainerOptions ArtifactTraining();

// Trains on `samples` (all of one feature width). Fails on an empty set,
// mixed widths or a non-positive latency.
absl::StatusOr<Mlp> TrainMlp(const std::vector<MlpSample>& samples,
                             const MlpTrainerOptions& options);

// Mean absolute percentage error (0..1) of `mlp` on `samples`.
double MeanAbsolutePercentageError(const Mlp& mlp,
                                   const std::vector<MlpSample>& samples);

}  // namespace tessera
