#include "perfmodel/las_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"

namespace tessera {

double LasModel::Degradation(const LasCoefficients& c, double share_percent) {
  const double gap = std::max(0.0, 1 - share_percent / 100);
  return std::exp(c.xi * std::pow(gap, c.kappa));
}

double LasModel::BaseMs(const LasCoefficients& c, int batch) {
  const double b = batch;
  double t = c.delta * b + c.omega;
  if (c.compute_term) t += (b + c.alpha) * std::exp(-(c.beta * b + c.gamma));
  return std::max(t, 1e-6);
}

double LasModel::ProcMs(const LasCoefficients& c, int batch,
                        double share_percent) {
  return BaseMs(c, batch) * Degradation(c, share_percent);
}

double LasModel::QueueMs(double rate_rps, int batch, double service_ms) {
  const double lambda = rate_rps / 1000.0;  // per ms
  const double busy = lambda * service_ms;
  if (busy >= batch) return std::numeric_limits<double>::infinity();
  return lambda * service_ms * service_ms / (2 * (batch - busy));
}

namespace {

// Solves the n x n normal equations a[.][n] in place (partial pivoting);
// false when singular.
template <int N>
bool SolveNormal(double (&a)[N][N + 1], double (&x)[N]) {
  for (int i = 0; i < N; ++i) a[i][i] += 1e-12 * (1 + a[i][i]);
  for (int c = 0; c < N; ++c) {
    int piv = c;
    for (int r = c + 1; r < N; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    if (std::fabs(a[piv][c]) < 1e-300) return false;
    std::swap(a[c], a[piv]);
    for (int r = 0; r < N; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j <= N; ++j) a[r][j] -= f * a[c][j];
    }
  }
  for (int i = 0; i < N; ++i) x[i] = a[i][N] / a[i][i];
  return true;
}

// The beta grid FitLasModel scans: i * kBetaStep for |i| <= kBetaSteps.
constexpr int kBetaSteps = 200;
constexpr double kBetaStep = 0.0025;
// Batches whose exp(-beta b) over the grid DecayTable holds.
constexpr int kTableBatches = 64;

// exp(-beta b) for every beta of the grid (row i + kBetaSteps) and batch
// 0..kTableBatches, computed once per process exactly as FitAtBeta would
// (the planner fits every model on every call).
const std::vector<double>& DecayTable() {
  static const std::vector<double>* const table = [] {
    auto* t =
        new std::vector<double>((2 * kBetaSteps + 1) * (kTableBatches + 1));
    for (int i = -kBetaSteps; i <= kBetaSteps; ++i) {
      const double beta = i * kBetaStep;
      for (int batch = 0; batch <= kTableBatches; ++batch) {
        const double b = batch;
        (*t)[(i + kBetaSteps) * (kTableBatches + 1) + batch] =
            std::exp(-beta * b);
      }
    }
    return t;
  }();
  return *table;
}

// Relative SSE of Eq. 4 at a fixed beta; fills `c` (delta, omega, and the
// compute term when it is positive). The planner fits every model on
// every Schedule(): normal equations accumulated in place. With the
// compute term, `decay_row` holds exp(-beta b) for batches
// 0..kTableBatches (DecayTable) and `decay` (one per sample) receives the
// exp(-beta b) the error sum reuses.
double FitAtBeta(const std::vector<LasSample>& full, double beta,
                 bool with_compute, LasCoefficients* c,
                 const double* decay_row = nullptr,
                 std::vector<double>* decay = nullptr) {
  LasCoefficients t = *c;
  t.compute_term = with_compute;
  if (with_compute) {
    double a[4][5] = {};
    decay->resize(full.size());
    for (size_t k = 0; k < full.size(); ++k) {
      const LasSample& s = full[k];
      const double b = s.batch, w = 1.0 / s.latency_ms;
      const double e =
          s.batch <= kTableBatches ? decay_row[s.batch] : std::exp(-beta * b);
      (*decay)[k] = e;
      const double x[4] = {w * b * e, w * e, w * b, w};
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) a[i][j] += x[i] * x[j];
        a[i][4] += x[i];
      }
    }
    double sol[4];
    if (!SolveNormal<4>(a, sol) || !(sol[0] > 0)) {
      return std::numeric_limits<double>::infinity();
    }
    t.beta = beta;
    t.gamma = -std::log(sol[0]);
    t.alpha = sol[1] / sol[0];
    t.delta = sol[2];
    t.omega = sol[3];
    // Eq. 4 with exp(-(beta b + gamma)) = decay * sol[0].
    double sse = 0;
    for (size_t k = 0; k < full.size(); ++k) {
      const double b = full[k].batch;
      const double base = std::max(
          t.delta * b + t.omega + (b + t.alpha) * (*decay)[k] * sol[0], 1e-6);
      const double e = base / full[k].latency_ms - 1;
      sse += e * e;
    }
    *c = t;
    return sse;
  }
  double a[2][3] = {};
  for (const auto& s : full) {
    const double b = s.batch, w = 1.0 / s.latency_ms;
    const double x[2] = {w * b, w};
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) a[i][j] += x[i] * x[j];
      a[i][2] += x[i];
    }
  }
  double sol[2];
  if (!SolveNormal<2>(a, sol)) {
    return std::numeric_limits<double>::infinity();
  }
  t.delta = sol[0];
  t.omega = sol[1];
  double sse = 0;
  for (const auto& s : full) {
    const double e = LasModel::BaseMs(t, s.batch) / s.latency_ms - 1;
    sse += e * e;
  }
  *c = t;
  return sse;
}

}  // namespace

absl::StatusOr<LasCoefficients> FitLasModel(
    const std::vector<LasSample>& samples) {
  std::vector<LasSample> full;
  std::map<int, double> full_ms;
  for (const auto& s : samples) {
    if (!(s.latency_ms > 0) || s.batch < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad latency sample (batch ", s.batch, ", ", s.latency_ms, " ms)"));
    }
    if (s.share_percent >= 100) {
      full.push_back(s);
      full_ms[s.batch] = s.latency_ms;
    }
  }
  if (full_ms.size() < 2) {
    return absl::InvalidArgumentError(
        "the LAS fit needs at least two batch sizes measured at 100 %");
  }
  LasCoefficients best;
  double best_sse = FitAtBeta(full, 0, /*with_compute=*/false, &best);
  if (full_ms.size() >= 4) {
    const std::vector<double>& table = DecayTable();
    std::vector<double> decay;
    for (int i = -kBetaSteps; i <= kBetaSteps; ++i) {
      LasCoefficients c;
      const double sse =
          FitAtBeta(full, i * kBetaStep, true, &c,
                    &table[(i + kBetaSteps) * (kTableBatches + 1)], &decay);
      if (sse < best_sse - 1e-12) {
        best_sse = sse;
        best = c;
      }
    }
  }
  // Eq. 3 on the slow-down relative to the same batch at 100 %. Samples
  // share a few distinct shares: sums per share keep the kappa scan cheap.
  struct Group {
    double n = 0, sy = 0, syy = 0;
  };
  std::map<double, Group> groups;  // by 1 - p
  for (const auto& s : samples) {
    if (s.share_percent >= 100) continue;
    auto it = full_ms.find(s.batch);
    if (it == full_ms.end()) continue;
    const double y = std::log(s.latency_ms / it->second);
    Group& g = groups[1 - s.share_percent / 100];
    g.n += 1;
    g.sy += y;
    g.syy += y * y;
  }
  double best_err = std::numeric_limits<double>::infinity();
  for (int i = 0; i <= 240 && !groups.empty(); ++i) {
    const double kappa = 0.05 * std::pow(10.0, i / 100.0);  // 0.05 .. 12.6
    double sxy = 0, sxx = 0;
    for (const auto& [gap, g] : groups) {
      const double x = std::pow(gap, kappa);
      sxy += x * g.sy;
      sxx += g.n * x * x;
    }
    if (sxx <= 0) continue;
    const double xi = std::max(0.0, sxy / sxx);
    // sum (xi x - y)^2 over the samples, from the per-share sums.
    double err = 0;
    for (const auto& [gap, g] : groups) {
      const double x = xi * std::pow(gap, kappa);
      err += g.n * x * x - 2 * x * g.sy + g.syy;
    }
    if (err < best_err) {
      best_err = err;
      best.xi = xi;
      best.kappa = kappa;
    }
  }
  return best;
}

}  // namespace tessera
