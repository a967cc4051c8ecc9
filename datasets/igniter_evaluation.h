#pragma once

#include <string>
#include <vector>

#include "datasets/igniter_coefficients.h"
#include "datasets/igniter_v100_data.h"

namespace tessera {

// One prediction of iGniter's model next to a measurement.
struct IgniterCheck {
  std::string model;
  int batch = 1;
  double share_percent = 0;
  std::string co_runner;  // empty: solo
  double measured_ms = 0;
  double predicted_ms = 0;  // t_inf (Eq. 1)
  double relative_error() const;
};

// iGniter's model (`coefficients`) against the measured latencies of the
// public V100 data (`data`, loaded with Share100Rule::kOmit so only
// measured cells count): every solo cell, and both sides of every
// co-location row (two workloads on complementary shares).
struct IgniterEvaluation {
  std::vector<IgniterCheck> solo;
  std::vector<IgniterCheck> pairs;
};
IgniterEvaluation EvaluateIgniterModel(const IgniterCoefficients& coefficients,
                                       const IgniterV100Data& data);

// The q-quantile (0..1) of the checks' relative errors; 0 when empty.
double ErrorQuantile(const std::vector<IgniterCheck>& checks, double q);

}  // namespace tessera
