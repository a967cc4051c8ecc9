#include "scheduler/time_share_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera {

double SoloLatency(const Slice& slice, int batch, double share) {
  return slice.demand->latency->LatencyMs(batch, share);
}

int SaturatedBatch(const ModelDemand& m, double share) {
  int best = 0;
  for (int b = 1; b <= m.max_batch; ++b) {
    if (2 * m.latency->LatencyMs(b, share) <= m.slo_ms) best = b;
  }
  return best;
}

double SaturatedThroughput(const ModelDemand& m, double share) {
  const int b = SaturatedBatch(m, share);
  if (b == 0) return 0;
  return 1000.0 * b / m.latency->LatencyMs(b, share);
}

namespace {

// Evaluates duty cycle d; fills `out` and returns true when feasible.
bool TryDutyCycle(const std::vector<Slice>& slices, double share, double d,
                  const SliceLatencyFn& latency, GpuletSchedule* out) {
  double sum = 0;
  out->batches.assign(slices.size(), 0);
  out->exec_ms.assign(slices.size(), 0);
  for (size_t j = 0; j < slices.size(); ++j) {
    const Slice& s = slices[j];
    const int b = std::max(
        1, static_cast<int>(std::ceil(s.rate_rps * d / 1000.0 - 1e-9)));
    if (b > s.demand->max_batch) return false;
    out->batches[j] = b;
    out->exec_ms[j] = latency(s, b, share);
    sum += out->exec_ms[j];
  }
  if (sum > d * (1 + 1e-9)) return false;
  for (const Slice& s : slices) {
    if (d + sum > s.demand->slo_ms * (1 + 1e-9)) return false;
  }
  out->duty_cycle_ms = d;
  out->occupancy = sum / d;
  return true;
}

}  // namespace

std::optional<GpuletSchedule> SolveTimeShare(const std::vector<Slice>& slices,
                                             double share_percent,
                                             const SliceLatencyFn& latency) {
  if (slices.empty()) return std::nullopt;
  std::vector<double> candidates;
  double min_round = 0;
  double min_slo = std::numeric_limits<double>::infinity();
  for (const Slice& s : slices) {
    min_round += latency(s, 1, share_percent);
    min_slo = std::min(min_slo, s.demand->slo_ms);
    if (s.rate_rps <= 0) continue;
    for (int b = 1; b <= s.demand->max_batch; ++b) {
      candidates.push_back(1000.0 * b / s.rate_rps);
    }
  }
  // The largest duty cycle at which slice j at batch b (others at batch
  // 1) still meets the tightest SLO: exact for a model alone.
  for (const Slice& s : slices) {
    const double others = min_round - latency(s, 1, share_percent);
    for (int b = 1; b <= s.demand->max_batch; ++b) {
      candidates.push_back(min_slo - others - latency(s, b, share_percent));
    }
  }
  // Geometric grid over [shortest round, tightest SLO - shortest round].
  const double hi = min_slo - min_round;
  if (hi < min_round) return std::nullopt;  // not even batch 1 fits
  const int kGrid = 48;
  for (int i = 0; i <= kGrid; ++i) {
    candidates.push_back(
        min_round * std::pow(hi / min_round, static_cast<double>(i) / kGrid));
  }
  std::optional<GpuletSchedule> best;
  GpuletSchedule trial;
  trial.share_percent = share_percent;
  trial.slices = slices;
  for (double d : candidates) {
    if (d < min_round * (1 - 1e-9) || d > hi * (1 + 1e-9)) continue;
    if (TryDutyCycle(slices, share_percent, d, latency, &trial) &&
        (!best || trial.occupancy < best->occupancy - 1e-12)) {
      best = trial;
    }
  }
  return best;
}

}  // namespace tessera
