#pragma once

#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

// Ordinary least squares with optional ridge regularisation: minimises
// |X w - y|^2 + ridge * |w|^2 by solving the normal equations with a
// Cholesky factorisation. Meant for the few-feature regressions of the
// interference models (tens of features, thousands of rows).
// FAILED_PRECONDITION when the system is singular (add ridge).
absl::StatusOr<std::vector<double>> SolveLeastSquares(
    const std::vector<std::vector<double>>& x, const std::vector<double>& y,
    double ridge = 0);

}  // namespace tessera
