#pragma once

#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

// iGniter's inference performance model (Xu et al., TPDS 2023, Sec. 3.1,
// Eqs. 1-11 and Theorem 1), in one unit system: times in ms, shares in
// percent (as the authors' scripts fit k1..k5), data in bytes, bandwidth in
// bytes per ms, power in W, clock in MHz, L2 utilisation in percent, and
// "processing ability" b / k_act in items per second.
//
// Terms whose inputs a device lacks are switched off explicitly, never
// filled with made-up numbers:
//  * power_enabled = false: no power or clock term (f = F always), e.g. on
//    `cpu` and emulated devices, which report no power;
//  * scheduling_enabled = false: no growth of the kernel scheduling delay
//    with the number of co-runners (Eq. 6), e.g. where kernel counts are
//    unknown; a workload with kernels == 0 also gets no growth;
//  * bandwidth_bytes_per_ms = 0: no host-device transfer (Eq. 3).

// The seven hardware coefficients, plus the share step r_unit.
struct IgniterHardware {
  bool power_enabled = false;
  double idle_power_w = 0;       // p_idle
  double max_power_w = 0;        // P, the power cap
  double max_clock_mhz = 0;      // F
  double alpha_f_mhz_per_w = 0;  // clock slope above the cap (< 0)
  bool scheduling_enabled = false;
  // Growth of the per-kernel scheduling delay with N >= 2 co-runners:
  // delta_sch = alpha_sch * N + beta_sch (ms per kernel).
  double alpha_sch_ms = 0;
  double beta_sch_ms = 0;
  double bandwidth_bytes_per_ms = 0;  // B_pcie; 0 = transfers not modelled
  double share_unit_percent = 2.5;    // r_unit
  double max_share_percent = 100;     // r_max
};

// The workload-specific coefficients of one model on one device type.
struct IgniterWorkload {
  std::string model;
  double input_bytes = 0;   // d_load for batch 1
  double output_bytes = 0;  // d_feedback for batch 1
  int kernels = 0;          // n_k; 0 = unknown (no delta_sch term)
  // Solo scheduling delay of one inference, all kernels together
  // (k_sch * n_k: the authors' "idletime_1"; the digest's pitfall P3).
  double solo_sched_ms = 0;
  // Eq. 11: k_act = (k1 b^2 + k2 b + k3) / (r + k4) + k5.
  std::array<double, 5> k = {0, 0, 0, 0, 0};
  // Eq. 8: slow-down per percent of the co-runners' summed L2 utilisation.
  double alpha_cache = 0;
  // p = alpha_power * ability + beta_power (W above idle); c likewise (%).
  double alpha_power = 0, beta_power = 0;
  double alpha_l2 = 0, beta_l2 = 0;
  // Smallest share the coefficients were fitted at; the model is not
  // trusted below it (pitfall P14).
  double min_share_percent = 0;
};

// One workload resident on a GPU with its batch size and share.
struct IgniterResident {
  const IgniterWorkload* workload = nullptr;
  int batch = 1;
  double share_percent = 100;
};

struct IgniterPrediction {
  double load_ms = 0;
  double gpu_ms = 0;
  double feedback_ms = 0;
  double inference_ms = 0;    // Eq. 1
  double throughput_rps = 0;  // Eq. 2
  double clock_ratio = 1;     // f / F
};

class IgniterModel {
 public:
  explicit IgniterModel(IgniterHardware hardware) : hw_(hardware) {}
  const IgniterHardware& hardware() const { return hw_; }

  // Eq. 11: GPU active time running alone at full clock.
  static double ActiveMs(const IgniterWorkload& w, int batch,
                         double share_percent);
  // Items per second of GPU active time, b / k_act.
  static double Ability(const IgniterWorkload& w, int batch,
                        double share_percent);
  // Power above idle (W) and L2 utilisation (%) running alone.
  static double PowerW(const IgniterWorkload& w, int batch,
                       double share_percent);
  static double L2Percent(const IgniterWorkload& w, int batch,
                          double share_percent);

  // Eqs. 1-10 for every resident of one GPU (same order).
  std::vector<IgniterPrediction> Predict(
      const std::vector<IgniterResident>& gpu) const;

  // Theorem 1, Eq. 17: the batch size that just sustains `rate_rps` when
  // execution takes half the SLO.
  int ApproxBatch(const IgniterWorkload& w, double slo_ms,
                  double rate_rps) const;
  // Theorem 1, Eq. 18: the lower-bound share (percent, a multiple of
  // r_unit, at least r_unit and at least the workload's min share); +inf
  // when the half-SLO budget is used up by transfers, k5 and the solo
  // scheduling delay (delta <= 0, pitfall P9).
  double LowerShare(const IgniterWorkload& w, double slo_ms, int batch) const;

 private:
  IgniterHardware hw_;
};

// One solo measurement of the GPU active time.
struct ActiveTimeSample {
  int batch = 1;
  double share_percent = 100;
  double active_ms = 0;
};

// Least-squares fit of Eq. 11's k1..k5 to the samples, minimising the
// relative error (the authors' curve_fit minimises the absolute error, which
// lets the slow large-batch cells swamp the fast ones): a search over k4
// (the only non-linear coefficient) with a linear solve for the others at
// each k4. INVALID_ARGUMENT with fewer than 5 samples.
absl::StatusOr<std::array<double, 5>> FitActiveTime(
    const std::vector<ActiveTimeSample>& samples);

// y = slope * x + intercept by least squares; {0, mean} for a degenerate x.
std::array<double, 2> FitLine(const std::vector<double>& x,
                              const std::vector<double>& y);

}  // namespace tessera
