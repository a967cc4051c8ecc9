#pragma once

#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

// The latency model of the KAIST latency-aware scheduler ("LAS": Kim, Lee,
// Youn, seeds/digests/kaist-las.md, Eqs. 3-6), times in ms, shares in
// percent (p = share / 100 in the equations).
//   t_proc(b, p) = [ (b + alpha) exp(-(beta b + gamma)) + delta b + omega ]
//                  * exp(xi (1 - p)^kappa)                        (Eq. 5)
//   t_queue      = lambda t^2 / (2 (b - lambda t))  (M/D/1 of batches,
//                  Eq. 6; +inf unless lambda t < b)
// The compute term is kept as (a b + c) exp(-beta b) with a = exp(-gamma),
// c = alpha exp(-gamma), which the fit solves linearly; a fit in which no
// positive compute term helps drops it (compute_term = false).
struct LasCoefficients {
  bool compute_term = true;
  double alpha = 0, beta = 0, gamma = 0;  // compute-bound kernels
  double delta = 0, omega = 0;            // memory-bound kernels
  double xi = 0, kappa = 1;               // share degradation d(p)
};

class LasModel {
 public:
  // Eq. 3: d(p) = exp(xi (1 - p)^kappa), d(100 %) = 1.
  static double Degradation(const LasCoefficients& c, double share_percent);
  // Eq. 4 (solo, whole device).
  static double BaseMs(const LasCoefficients& c, int batch);
  // Eq. 5.
  static double ProcMs(const LasCoefficients& c, int batch,
                       double share_percent);
  // Eq. 6 with `service_ms` the batch's processing time; +inf when the
  // queue is unstable (rate x service >= batch).
  static double QueueMs(double rate_rps, int batch, double service_ms);
};

struct LasSample {
  int batch = 1;
  double share_percent = 100;
  double latency_ms = 0;
};

// The digest's two-step fit (Sec. 2.6): Eq. 4 on the samples at 100 %
// (a scan over beta with a linear relative least-squares solve for the
// rest), then Eq. 3 on log(L(b, p) / L(b, 100 %)) (a scan over kappa with
// xi solved in closed form). INVALID_ARGUMENT without at least two batch
// sizes at 100 %.
absl::StatusOr<LasCoefficients> FitLasModel(
    const std::vector<LasSample>& samples);

}  // namespace tessera
