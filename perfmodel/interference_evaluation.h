#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "perfmodel/interference_model.h"

namespace tessera {

// How well interference models predict co-located latency: shared by the
// V100 fit (tessera_fit_interference) and the CPU profiler.

struct InterferenceFitter {
  std::string name;
  // nullptr when the rows cannot be fitted.
  std::function<std::unique_ptr<InterferenceModel>(
      const std::vector<CoLocationSample>&)>
      fit;
};

// none (factor 1), constant, gpulet-linear, pairwise.
std::vector<InterferenceFitter> StandardInterferenceFitters();

// |predicted - measured| / measured of each row's co-located latency.
std::vector<double> RelativeErrors(const InterferenceModel& model,
                                   const std::vector<CoLocationSample>& rows);

// Trains on the rows of every group but one and tests on that one, for
// each group; returns the pooled held-out errors.
std::vector<double> LeaveGroupOut(
    const std::vector<CoLocationSample>& rows,
    const std::function<std::string(const CoLocationSample&)>& group,
    const InterferenceFitter& fitter);

// The unordered model pair of a row, and its (batch, batch, share) cell
// independent of which side is `self`.
std::string ModelPairOf(const CoLocationSample& row);
std::string CellOf(const CoLocationSample& row);

// Random split of `rows` into train (about `train_fraction`) and test,
// keeping consecutive pairs (the two sides of one co-location) together.
void SplitRowPairs(const std::vector<CoLocationSample>& rows, uint64_t seed,
                   double train_fraction, std::vector<CoLocationSample>* train,
                   std::vector<CoLocationSample>* test);

// Prints, per standard fitter, p50/p90/p95 of the held-out errors for a
// random 70/30 split (rows come in pairs, kept together), leave-one-pair-
// out and leave-one-cell-out.
void PrintInterferenceErrorTable(const std::vector<CoLocationSample>& rows,
                                 uint64_t seed, FILE* out);

}  // namespace tessera
