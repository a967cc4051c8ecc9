#pragma once

// A small multilayer perceptron evaluated in plain C++ (no LibTorch): the
// group-latency predictors of Abacus, both the emulated A100's ground truth
// (the authors' fitted checkpoints) and Tessera's own learned predictor.

#include <vector>

#include "absl/status/statusor.h"
#include "overlap.pb.h"
#include "overlap/torch_checkpoint.h"

namespace tessera {

class Mlp {
 public:
  // Validates shapes: each layer's inputs equal the previous outputs, the
  // last layer has one output, the normalisation is empty or input-sized.
  static absl::StatusOr<Mlp> FromProto(const MlpProto& proto);
  // The authors' layout: Linear layers named `names` in order, ReLU after
  // every layer but the last, raw inputs, output in milliseconds.
  static absl::StatusOr<Mlp> FromStateDict(
      const StateDict& dict, const std::vector<std::string>& names);

  int inputs() const { return proto_.layers(0).inputs(); }
  const MlpProto& proto() const { return proto_; }

  // The network's output for one input vector (exp'd when log_output).
  double Predict(const std::vector<float>& x) const;

 private:
  explicit Mlp(MlpProto proto) : proto_(std::move(proto)) {}
  MlpProto proto_;
};

}  // namespace tessera
