#include "perfmodel/least_squares.h"

#include <cmath>

namespace tessera {

absl::StatusOr<std::vector<double>> SolveLeastSquares(
    const std::vector<std::vector<double>>& x, const std::vector<double>& y,
    double ridge) {
  if (x.empty() || x.size() != y.size()) {
    return absl::InvalidArgumentError("least squares: bad dimensions");
  }
  const size_t n = x[0].size();
  // A = X^T X + ridge I, b = X^T y.
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0));
  std::vector<double> b(n, 0);
  for (size_t r = 0; r < x.size(); ++r) {
    if (x[r].size() != n) {
      return absl::InvalidArgumentError("least squares: ragged rows");
    }
    for (size_t i = 0; i < n; ++i) {
      b[i] += x[r][i] * y[r];
      for (size_t j = 0; j <= i; ++j) a[i][j] += x[r][i] * x[r][j];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    a[i][i] += ridge;
    for (size_t j = 0; j < i; ++j) a[j][i] = a[i][j];
  }
  // Cholesky: A = L L^T, stored in the lower triangle of a.
  for (size_t j = 0; j < n; ++j) {
    double d = a[j][j];
    for (size_t k = 0; k < j; ++k) d -= a[j][k] * a[j][k];
    if (!(d > 1e-12)) {
      return absl::FailedPreconditionError(
          "least squares: singular system (features are collinear)");
    }
    a[j][j] = std::sqrt(d);
    for (size_t i = j + 1; i < n; ++i) {
      double s = a[i][j];
      for (size_t k = 0; k < j; ++k) s -= a[i][k] * a[j][k];
      a[i][j] = s / a[j][j];
    }
  }
  std::vector<double> z(n), w(n);
  for (size_t i = 0; i < n; ++i) {  // L z = b
    double s = b[i];
    for (size_t k = 0; k < i; ++k) s -= a[i][k] * z[k];
    z[i] = s / a[i][i];
  }
  for (size_t i = n; i-- > 0;) {  // L^T w = z
    double s = z[i];
    for (size_t k = i + 1; k < n; ++k) s -= a[k][i] * w[k];
    w[i] = s / a[i][i];
  }
  return w;
}

}  // namespace tessera
