#pragma once

// The emulated A100's ground truth for operator groups: the Abacus authors'
// fitted group-latency predictors (`../shared/data/abacus-a100/`, read at
// run time), with run-to-run noise as the paper measured it. Tessera's own
// predictor never reads these; it learns from groups this device runs.

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "overlap/mlp.h"
#include "overlap/service_catalog.h"

namespace tessera {

class A100GroundTruth {
 public:
  // Loads the predictors for groups of up to `max_group_size` queries (2
  // to 4): the 2-of-7 one always, the 3-of-4 and 4-of-4 ones beyond.
  static absl::StatusOr<std::unique_ptr<A100GroundTruth>> Create(
      const std::string& data_dir, int max_group_size);

  // Whether the data covers a group of these services: any two of the
  // seven; three or four only within {resnet101, resnet152, vgg19, bert}.
  bool Covers(const std::vector<int>& services) const;

  // The group's median latency in ms (the group must be covered). A group
  // of one query is evaluated by the pair predictor beside an empty range
  // [0, 0) of resnet50 (of resnet101 for resnet50 itself): the authors
  // never measured a query alone, so that value is an extrapolation
  // (`extrapolated` says so).
  double MeanMs(const OperatorGroup& group, bool* extrapolated = nullptr) const;

  // One run: the mean times (1 + N(0, noise_fraction)), at least 5 % of it.
  double SampleMs(const OperatorGroup& group, std::mt19937_64& rng) const;

  // The paper's run-to-run spread: std ≈ 4.5 % of the mean.
  static constexpr double kNoiseFraction = 0.045;

 private:
  explicit A100GroundTruth(std::map<int, Mlp> by_size)
      : by_size_(std::move(by_size)) {}

  std::map<int, Mlp> by_size_;  // group size → predictor
};

}  // namespace tessera
