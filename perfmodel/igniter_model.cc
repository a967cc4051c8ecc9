#include "perfmodel/igniter_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace tessera {

double IgniterModel::ActiveMs(const IgniterWorkload& w, int batch,
                              double share_percent) {
  const double b = batch;
  const auto& k = w.k;
  // Guard r + k4 <= 0 (pitfall P14): the fit is not valid there.
  const double denom = std::max(share_percent + k[3], 1e-6);
  return std::max((k[0] * b * b + k[1] * b + k[2]) / denom + k[4], 1e-6);
}

double IgniterModel::Ability(const IgniterWorkload& w, int batch,
                             double share_percent) {
  return 1000.0 * batch / ActiveMs(w, batch, share_percent);
}

double IgniterModel::PowerW(const IgniterWorkload& w, int batch,
                            double share_percent) {
  return std::max(
      0.0, w.alpha_power * Ability(w, batch, share_percent) + w.beta_power);
}

double IgniterModel::L2Percent(const IgniterWorkload& w, int batch,
                               double share_percent) {
  return std::max(0.0,
                  w.alpha_l2 * Ability(w, batch, share_percent) + w.beta_l2);
}

std::vector<IgniterPrediction> IgniterModel::Predict(
    const std::vector<IgniterResident>& gpu) const {
  const int n = static_cast<int>(gpu.size());
  // Eq. 6: the per-kernel scheduling delay grows with the co-runner count.
  const double delta_sch = (hw_.scheduling_enabled && n > 1)
                               ? hw_.alpha_sch_ms * n + hw_.beta_sch_ms
                               : 0.0;
  std::vector<double> l2(n), power(n);
  double total_l2 = 0, demand = hw_.idle_power_w;
  for (int i = 0; i < n; ++i) {
    const auto& r = gpu[i];
    l2[i] = L2Percent(*r.workload, r.batch, r.share_percent);
    total_l2 += l2[i];
    if (hw_.power_enabled) {
      power[i] = PowerW(*r.workload, r.batch, r.share_percent);
      demand += power[i];  // Eq. 10 (p above idle: pitfall P4)
    }
  }
  // Eq. 9: the clock drops linearly once the demand passes the cap.
  double ratio = 1.0;
  if (hw_.power_enabled && hw_.max_clock_mhz > 0 && demand > hw_.max_power_w) {
    const double f =
        hw_.max_clock_mhz + hw_.alpha_f_mhz_per_w * (demand - hw_.max_power_w);
    ratio = std::clamp(f / hw_.max_clock_mhz, 0.1, 1.0);
  }
  std::vector<IgniterPrediction> out(n);
  for (int i = 0; i < n; ++i) {
    const auto& r = gpu[i];
    const IgniterWorkload& w = *r.workload;
    // Eq. 5 in the authors' form: the solo total plus the growth per kernel.
    const double sch = w.solo_sched_ms + delta_sch * w.kernels;
    // Eq. 8: the co-runners' L2 utilisation (sum over i' != i).
    const double act = ActiveMs(w, r.batch, r.share_percent) *
                       (1 + w.alpha_cache * (total_l2 - l2[i]));
    IgniterPrediction& p = out[i];
    p.clock_ratio = ratio;
    p.gpu_ms = (sch + act) / ratio;        // Eq. 4
    if (hw_.bandwidth_bytes_per_ms > 0) {  // Eq. 3
      p.load_ms = w.input_bytes * r.batch / hw_.bandwidth_bytes_per_ms;
      p.feedback_ms = w.output_bytes * r.batch / hw_.bandwidth_bytes_per_ms;
    }
    p.inference_ms = p.load_ms + p.gpu_ms + p.feedback_ms;             // Eq. 1
    p.throughput_rps = 1000.0 * r.batch / (p.gpu_ms + p.feedback_ms);  // Eq. 2
  }
  return out;
}

int IgniterModel::ApproxBatch(const IgniterWorkload& w, double slo_ms,
                              double rate_rps) const {
  // Eq. 17 with R in requests per ms: T R B / (2 (B + R d_load)); with no
  // transfer term it is T R / 2.
  const double r = rate_rps / 1000.0;
  double b = slo_ms * r / 2;
  if (hw_.bandwidth_bytes_per_ms > 0) {
    b = slo_ms * r * hw_.bandwidth_bytes_per_ms /
        (2 * (hw_.bandwidth_bytes_per_ms + r * w.input_bytes));
  }
  // The tolerance keeps an exact integer from rounding up by float noise.
  return std::max(1, static_cast<int>(std::ceil(b - 1e-9)));
}

double IgniterModel::LowerShare(const IgniterWorkload& w, double slo_ms,
                                int batch) const {
  const double b = batch;
  const double gamma = w.k[0] * b * b + w.k[1] * b + w.k[2];
  double delta = slo_ms / 2 - w.k[4] - w.solo_sched_ms;
  if (hw_.bandwidth_bytes_per_ms > 0) {
    delta -= (w.input_bytes + w.output_bytes) * b / hw_.bandwidth_bytes_per_ms;
  }
  if (delta <= 0) return std::numeric_limits<double>::infinity();
  const double unit = hw_.share_unit_percent;
  const double r =
      std::ceil(gamma / (delta * unit) - w.k[3] / unit - 1e-9) * unit;
  // At least one unit, and not below the fitted range.
  const double floor_share =
      std::ceil(std::max(unit, w.min_share_percent) / unit - 1e-9) * unit;
  return std::max(r, floor_share);
}

std::array<double, 2> FitLine(const std::vector<double>& x,
                              const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n == 0) return {0, 0};
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  if (sxx <= 1e-12 * std::max(1.0, mx * mx)) return {0, my};
  const double slope = sxy / sxx;
  return {slope, my - slope * mx};
}

namespace {

// Relative sum of squared errors of the linear solve at a fixed k4, or +inf.
// The planner fits every model on every Schedule(), so this accumulates the
// 4x4 normal equations in place rather than building a design matrix.
double SolveAtK4(const std::vector<ActiveTimeSample>& s, double k4,
                 std::array<double, 5>* k) {
  double a[4][5] = {};  // [X^T X | X^T y], y = 1 (relative error)
  for (const auto& p : s) {
    const double b = p.batch;
    const double inv = 1.0 / (p.share_percent + k4);
    const double w = 1.0 / p.active_ms;
    const double x[4] = {w * b * b * inv, w * b * inv, w * inv, w};
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 4; ++j) a[i][j] += x[i] * x[j];
      a[i][4] += x[i];
    }
  }
  // Gaussian elimination with partial pivoting (and a whisper of ridge).
  for (int i = 0; i < 4; ++i) a[i][i] += 1e-12 * (1 + a[i][i]);
  for (int c = 0; c < 4; ++c) {
    int piv = c;
    for (int r = c + 1; r < 4; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    if (std::fabs(a[piv][c]) < 1e-300) {
      return std::numeric_limits<double>::infinity();
    }
    std::swap(a[c], a[piv]);
    for (int r = 0; r < 4; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j < 5; ++j) a[r][j] -= f * a[c][j];
    }
  }
  double sol[4];
  for (int i = 0; i < 4; ++i) sol[i] = a[i][4] / a[i][i];
  *k = {sol[0], sol[1], sol[2], k4, sol[3]};
  double sse = 0;
  for (const auto& p : s) {
    const double b = p.batch;
    const double pred =
        (sol[0] * b * b + sol[1] * b + sol[2]) / (p.share_percent + k4) +
        sol[3];
    const double e = pred / p.active_ms - 1;
    sse += e * e;
  }
  return sse;
}

}  // namespace

absl::StatusOr<std::array<double, 5>> FitActiveTime(
    const std::vector<ActiveTimeSample>& samples) {
  if (samples.size() < 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fitting k1..k5 needs at least 5 samples, got ", samples.size()));
  }
  double min_share = std::numeric_limits<double>::infinity();
  for (const auto& s : samples) {
    if (!(s.active_ms > 0) || !(s.share_percent > 0) || s.batch < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad active-time sample (batch ", s.batch, ", share ",
                       s.share_percent, "%, ", s.active_ms, " ms)"));
    }
    min_share = std::min(min_share, s.share_percent);
  }
  // k4 > -min_share keeps r + k4 > 0 on the data; scan a geometric grid of
  // offsets above that bound, then refine around the best by golden
  // section.
  const double lo = -0.95 * min_share;
  double best_k4 = 0, best = std::numeric_limits<double>::infinity();
  std::array<double, 5> k{};
  for (int i = 0; i <= 60; ++i) {
    const double k4 = lo + 0.01 * std::pow(10.0, i / 15.0) - 0.01;
    const double e = SolveAtK4(samples, k4, &k);
    if (e < best) {
      best = e;
      best_k4 = k4;
    }
  }
  double a = std::max(lo, best_k4 - 0.3 * (std::fabs(best_k4 - lo) + 0.1));
  double b = best_k4 + 0.3 * (std::fabs(best_k4 - lo) + 0.1);
  const double g = (std::sqrt(5.0) - 1) / 2;
  for (int it = 0; it < 40; ++it) {
    const double c = b - g * (b - a), d = a + g * (b - a);
    if (SolveAtK4(samples, c, &k) < SolveAtK4(samples, d, &k)) {
      b = d;
    } else {
      a = c;
    }
  }
  const double k4 = (a + b) / 2;
  if (SolveAtK4(samples, k4, &k) > best) SolveAtK4(samples, best_k4, &k);
  return k;
}

}  // namespace tessera
