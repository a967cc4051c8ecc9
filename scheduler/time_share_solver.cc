#include "scheduler/time_share_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera {

std::vector<double> ShareGrid(
    const std::vector<const DeviceSnapshot*>& devices) {
  const std::vector<double>* common = nullptr;
  bool same = !devices.empty();
  for (const DeviceSnapshot* d : devices) {
    if (d->allowed_shares.empty()) {
      same = false;
    } else if (common == nullptr) {
      common = &d->allowed_shares;
    } else if (*common != d->allowed_shares) {
      same = false;
    }
  }
  std::vector<double> grid;
  if (same && common != nullptr) {
    grid = *common;
  } else {
    for (double p : AllowedShares()) {
      bool ok = true;
      for (const DeviceSnapshot* d : devices) {
        const auto& a = d->allowed_shares;
        ok = ok && (a.empty() || std::any_of(a.begin(), a.end(), [p](double x) {
                      return std::fabs(x - p) < 1e-9;
                    }));
      }
      if (ok) grid.push_back(p);
    }
  }
  std::sort(grid.begin(), grid.end());
  if (grid.empty() || grid.back() < 100) grid.push_back(100);
  return grid;
}

// The largest dispatcher cap SolveLoneBatchQueue plans with.
constexpr int kLoneQueueMaxCap = 8;

double PlannedLatency(const ModelDemand& m, int batch, double share) {
  // A whole-GPU gpulet has no neighbour: its own headroom.
  const double scale = share >= 100 && m.whole_gpu_latency_scale > 0
                           ? m.whole_gpu_latency_scale
                           : m.latency_scale;
  // Memoised for the partition sizes the policies use.
  const auto& shares = AllowedShares();
  const int index = static_cast<int>(
      std::find(shares.begin(), shares.end(), share) - shares.begin());
  if (index == static_cast<int>(shares.size()) || batch < 1 ||
      batch > m.max_batch) {
    return m.latency->LatencyMs(batch, share) * scale;
  }
  if (m.latency_cache.empty()) {
    m.latency_cache.assign(shares.size(),
                           std::vector<double>(m.max_batch + 1, -1.0));
  }
  double& v = m.latency_cache[index][batch];
  if (v < 0) v = m.latency->LatencyMs(batch, share) * scale;
  return v;
}

double SoloLatency(const Slice& slice, int batch, double share) {
  return PlannedLatency(*slice.demand, batch, share);
}

int SaturatedBatch(const ModelDemand& m, double share) {
  int best = 0;
  for (int b = 1; b <= m.max_batch; ++b) {
    if (2 * PlannedLatency(m, b, share) <= m.slo_ms) best = b;
  }
  return best;
}

double SaturatedThroughput(const ModelDemand& m, double share, int spacing) {
  const auto key = std::make_pair(share, spacing);
  auto it = m.saturated_cache.find(key);
  if (it != m.saturated_cache.end()) return it->second;
  // Upper bound: back-to-back batches of the saturated batch size.
  const int b = SaturatedBatch(m, share);
  double hi = b == 0 ? 0 : 1000.0 * b / PlannedLatency(m, b, share);
  double lo = 0;
  auto fits = [&](double rate) {
    return TimeShareFeasible({Slice{&m, rate, spacing}}, share, SoloLatency);
  };
  if (spacing > 1) {
    // At least what its own Poisson stream would carry; no more where the
    // batch queue is not checked (SolveLoneBatchQueue).
    lo = SaturatedThroughput(m, share, 1);
    if (b > kLoneQueueMaxCap) {
      m.saturated_cache[key] = lo;
      return lo;
    }
  }
  if (hi > 0 && fits(hi)) {
    lo = hi;
  } else if (hi > lo) {
    // A spacing's batch queue costs far more than a round: to 0.5 % of
    // the bracket there.
    const int steps = spacing > 1 ? 8 : 24;
    for (int i = 0; i < steps && hi - lo > 1e-3 * hi; ++i) {
      const double mid = (lo + hi) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
  }
  m.saturated_cache[key] = lo;
  return lo;
}

bool PlansRotation(const ModelDemand& m) {
  return m.queueing_check && m.round_robin_arrivals && m.lone_batch_queue;
}

int RotationSpacing(const ModelDemand& m, double rate_rps, double share,
                    double* per_gpulet_rps) {
  *per_gpulet_rps = SaturatedThroughput(m, share);
  if (!PlansRotation(m) || *per_gpulet_rps <= 0) return 1;
  const double poisson = *per_gpulet_rps;
  // t_k >= t_1: no more than floor(rate / t_1) gpulets at any spacing.
  // From the largest k down (t_k grows with k, so the first that fits is
  // the largest; most models need one or two bisections).
  const int most = static_cast<int>(std::floor(rate_rps / *per_gpulet_rps));
  for (int k = std::min(most, kBatchQueueMaxSpacing); k >= 2; --k) {
    const double t = SaturatedThroughput(m, share, k);
    // A spacing that carries no more than the gpulet's own Poisson stream
    // (the queue is not checked there) is not counted on.
    if (t > poisson && std::floor(rate_rps / t) >= k) {
      *per_gpulet_rps = t;
      return k;
    }
  }
  return 1;
}

int EvenSplitCount(const ModelDemand& m, double rate_rps, double share,
                   int most) {
  if (!PlansRotation(m) || SaturatedThroughput(m, share) <= 0) return 0;
  // No gpulet carries more than back-to-back batches of the saturated
  // batch (SaturatedThroughput's upper bound).
  const int sb = SaturatedBatch(m, share);
  const double t_max = 1000.0 * sb / PlannedLatency(m, sb, share);
  for (int n =
           std::max(2, static_cast<int>(std::ceil(rate_rps / t_max - 1e-9)));
       n <= most; ++n) {
    const Slice s{&m, rate_rps / n, std::min(n, kBatchQueueMaxSpacing)};
    if (TimeShareFeasible({s}, share, SoloLatency)) return n;
  }
  return 0;
}

int EvenSplitForResidue(const ModelDemand& m, double t) {
  if (t <= 0 || !PlansRotation(m)) return 0;
  int whole = 0;
  double residue = m.rate_rps;
  for (; residue > t; residue -= t) ++whole;
  if (residue <= 1e-9) return 0;
  // A residue that fits alone still takes a partition: an even split over
  // no more GPUs than the whole ones carries the model with none.
  if (SoloFits(m, residue, 100)) {
    return whole >= 2 ? EvenSplitCount(m, m.rate_rps, 100, whole) : 0;
  }
  return EvenSplitCount(m, m.rate_rps, 100, whole + 1);
}

bool SoloFits(const ModelDemand& m, double rate_rps, double share) {
  const auto key = std::make_pair(rate_rps, share);
  auto it = m.solo_fits_cache.find(key);
  if (it != m.solo_fits_cache.end()) return it->second;
  const bool fits =
      TimeShareFeasible({Slice{&m, rate_rps}}, share, SoloLatency);
  m.solo_fits_cache.emplace(key, fits);
  return fits;
}

namespace {

// Latencies of the slices on one gpulet by batch size, each computed at
// most once per SolveTimeShare call (on first use): the duty-cycle search
// below evaluates them a few hundred times, and the latency function may
// apply an interference model.
class LatencyTable {
 public:
  LatencyTable(const std::vector<Slice>& slices, double share,
               const SliceLatencyFn& latency)
      : slices_(slices), share_(share), latency_(latency) {
    rows_.resize(slices.size());
    for (size_t j = 0; j < slices.size(); ++j) {
      rows_[j].assign(slices[j].demand->max_batch + 1, -1.0);
    }
  }
  double operator()(size_t slice, int batch) const {
    double& v = rows_[slice][batch];
    if (v < 0) v = latency_(slices_[slice], batch, share_);
    return v;
  }

 private:
  const std::vector<Slice>& slices_;
  const double share_;
  const SliceLatencyFn& latency_;
  mutable std::vector<std::vector<double>>
      rows_;  // [slice][batch]; -1: not yet
};

// The burst bound (SharedRules.burst_bound): every model's batch at the
// `tail` quantile of its arrivals in one duty cycle d; that round fits the
// cycle and, after a wait of one cycle, every SLO.
bool BurstRoundFits(const std::vector<Slice>& slices, double d, double tail,
                    double max_marginal_load, const std::vector<int>& batches,
                    const LatencyTable& latency) {
  double round = 0;
  double marginal_load = 0;
  for (size_t j = 0; j < slices.size(); ++j) {
    const Slice& s = slices[j];
    const int b = batches[j];
    const int q = std::max(b, PoissonQuantile(s.rate_rps * d / 1000.0, tail));
    if (q > s.demand->max_batch) return false;
    round += latency(j, q);
    // The time each extra request of a burst adds to the round.
    if (q > b) {
      marginal_load +=
          s.rate_rps * (latency(j, q) - latency(j, b)) / (1000.0 * (q - b));
    }
  }
  if (marginal_load > max_marginal_load) return false;
  for (const Slice& s : slices) {
    if (d + round > s.demand->slo_ms * (1 + 1e-9)) return false;
  }
  return true;
}

// Evaluates duty cycle d; fills `out` and returns true when feasible.
bool TryDutyCycle(const std::vector<Slice>& slices, double d,
                  const LatencyTable& latency, GpuletSchedule* out) {
  double sum = 0;
  double load = 0;  // fraction of time the gpulet is busy at these rates
  out->batches.assign(slices.size(), 0);
  out->exec_ms.assign(slices.size(), 0);
  for (size_t j = 0; j < slices.size(); ++j) {
    const Slice& s = slices[j];
    const int b = std::max(
        1, static_cast<int>(std::ceil(s.rate_rps * d / 1000.0 - 1e-9)));
    if (b > s.demand->max_batch) return false;
    out->batches[j] = b;
    out->exec_ms[j] = latency(j, b);
    sum += out->exec_ms[j];
    load += s.rate_rps * out->exec_ms[j] / (1000.0 * b);
    if (sum > d * (1 + 1e-9)) return false;
  }
  // Queueing under Poisson arrivals: with the round as the service time
  // and utilisation rho (the busy fraction at these rates). A burst joins
  // the next batch up to the cap (RoundWaitMs). A lone model whose cap
  // stays at its batch (the next batch size breaks its SLO, see add_caps
  // in SolveTimeShare) is a fixed-batch server instead (FixedBatchWaitMs:
  // at batch 1 requests queue one by one, an exact M/D/1).
  double tail = slices.front().demand->queueing_tail;
  double round_tail = slices.front().demand->round_queueing_tail;
  for (const Slice& s : slices) {
    tail = std::min(tail, s.demand->queueing_tail);
    round_tail = std::min(round_tail, s.demand->round_queueing_tail);
  }
  double wait = RoundWaitMs(load, sum, round_tail);
  // FixedBatchWaitMs differs from RoundWaitMs only at batch 1: check the
  // cap only there (each check may cost an interfered latency).
  if (slices.size() == 1 && out->batches[0] == 1) {
    const ModelDemand& m = *slices[0].demand;
    const int b = out->batches[0];
    const bool cap_can_grow =
        b < m.max_batch && (d + latency(0, b + 1) <= m.slo_ms ||
                            2 * latency(0, b + 1) <= m.slo_ms);
    if (!cap_can_grow || !m.burst_caps) {
      wait = FixedBatchWaitMs(load, sum, b, tail);
    }
  }
  bool queueing_fits = true;
  double burst_tail = 1;  // 0 when any slice has the burst bound off
  double max_marginal_load = 1;
  for (const Slice& s : slices) {
    if (d + sum > s.demand->slo_ms * (1 + 1e-9)) return false;
    if (s.demand->queueing_check &&
        sum + wait > s.demand->slo_ms * (1 + 1e-9)) {
      queueing_fits = false;
    }
    burst_tail =
        s.demand->burst_caps ? std::min(burst_tail, s.demand->burst_tail) : 0;
    max_marginal_load =
        std::min(max_marginal_load, s.demand->burst_max_marginal_load);
  }
  if (!queueing_fits &&
      !(burst_tail > 0 &&
        BurstRoundFits(slices, d, burst_tail, max_marginal_load, out->batches,
                       latency))) {
    return false;
  }
  out->duty_cycle_ms = d;
  out->occupancy = sum / d;
  return true;
}

// The duty cycles worth trying (SolveTimeShare's comment), unfiltered.
std::vector<double> DutyCycleCandidates(const std::vector<Slice>& slices,
                                        const LatencyTable& table,
                                        double min_round, double min_slo) {
  std::vector<double> candidates;
  for (const Slice& s : slices) {
    if (s.rate_rps <= 0) continue;
    for (int b = 1; b <= s.demand->max_batch; ++b) {
      candidates.push_back(1000.0 * b / s.rate_rps);
    }
  }
  // The largest duty cycle at which slice j at batch b (others at batch
  // 1) still meets the tightest SLO: exact for a model alone.
  for (size_t j = 0; j < slices.size(); ++j) {
    const double others = min_round - table(j, 1);
    for (int b = 1; b <= slices[j].demand->max_batch; ++b) {
      const double d = min_slo - others - table(j, b);
      // L grows with b (profiles interpolate monotonically): once below the
      // shortest round, so is every larger batch's candidate, which the
      // search would skip. (Candidates are only proposals; feasibility is
      // checked for each.)
      if (d < min_round * (1 - 1e-9)) break;
      candidates.push_back(d);
    }
  }
  // Geometric grid over [shortest round, tightest SLO - shortest round].
  const double hi = min_slo - min_round;
  const int kGrid = 48;
  const double step = std::pow(hi / min_round, 1.0 / kGrid);
  double grid_d = min_round;
  for (int i = 0; i <= kGrid; ++i, grid_d *= step) {
    candidates.push_back(grid_d);
  }
  return candidates;
}

// The dispatcher's batch caps of a solved schedule: the largest batch of
// each slice that keeps the round within the tightest SLO (burst caps).
void AddCaps(const std::vector<Slice>& slices, const LatencyTable& table,
             double min_slo, GpuletSchedule* g) {
  double sum = 0;
  for (double e : g->exec_ms) sum += e;
  g->caps.assign(slices.size(), 0);
  for (size_t j = 0; j < slices.size(); ++j) {
    int cap = g->batches[j];
    if (!slices[j].demand->burst_caps) {  // SharedRules.burst_caps off
      g->caps[j] = cap;
      continue;
    }
    for (int b = cap + 1; b <= slices[j].demand->max_batch; ++b) {
      const double round = sum - g->exec_ms[j] + table(j, b);
      if (g->duty_cycle_ms + round > min_slo) break;
      cap = b;
    }
    if (slices.size() == 1) {
      // Alone on the gpulet, a burst may run at the saturated batch: a
      // request then waits at most one full batch before its own
      // (2 L(b) <= SLO).
      for (int b = cap + 1; b <= slices[j].demand->max_batch; ++b) {
        if (2 * table(j, b) > slices[j].demand->slo_ms) break;
        cap = b;
      }
    }
    g->caps[j] = cap;
  }
}

// A slice alone on its gpulet, dealt every k-th of its model's requests
// (k = arrival_spacing; 1: its own Poisson stream), under PlansRotation:
// its dispatcher starts min(queue, cap) requests whenever the gpulet is
// free, so the gpulet is the batch queue of LoneQueueLateFraction with
// Erlang-k arrivals. Feasible when the batch
// that keeps up with the rate back to back fits and the share of requests
// later than the SLO stays within the queueing tail, at the cap AddCaps
// gives the schedule (at most kLoneQueueMaxCap). The schedule runs that
// batch back to back (occupancy 1: nothing else joins the gpulet).
std::optional<GpuletSchedule> SolveLoneBatchQueue(const Slice& slice,
                                                  double share_percent,
                                                  const LatencyTable& table) {
  const ModelDemand& m = *slice.demand;
  // Where the SLO leaves room for batches past kLoneQueueMaxCap the rounds'
  // bounds above already admit nearly what the queue would (and the queue
  // would cost the most): not checked.
  if (m.max_batch > kLoneQueueMaxCap &&
      2 * table(0, kLoneQueueMaxCap + 1) <= m.slo_ms) {
    return std::nullopt;
  }
  int batch = 0;
  for (int b = 1; b <= m.max_batch; ++b) {
    if (2 * table(0, b) > m.slo_ms) break;
    if (1000.0 * b / table(0, b) > slice.rate_rps) {
      batch = b;
      break;
    }
  }
  if (batch == 0) return std::nullopt;
  GpuletSchedule g;
  g.share_percent = share_percent;
  g.slices = {slice};
  g.batches = {batch};
  g.exec_ms = {table(0, batch)};
  g.duty_cycle_ms = table(0, batch);
  g.occupancy = 1;
  AddCaps(g.slices, table, m.slo_ms, &g);
  // The queue's cost grows with the cap (and the dispatcher keeps the
  // schedule's cap): a cap past kLoneQueueMaxCap gains little throughput.
  g.caps[0] = std::min(g.caps[0], std::max(batch, kLoneQueueMaxCap));
  std::vector<double> batch_ms;
  for (int b = 1; b <= g.caps[0]; ++b) batch_ms.push_back(table(0, b));
  // Memoised: the layout searches ask for the same gpulet again and again.
  auto key = std::make_tuple(slice.rate_rps, slice.arrival_spacing,
                             std::move(batch_ms));
  auto it = m.lone_queue_cache.find(key);
  if (it == m.lone_queue_cache.end()) {
    const auto& [rate, spacing, ms] = key;
    // SharedRules.lone_queue_dispatcher: from cap 2 the dispatcher's queue
    // on a whole GPU, each batch predicted at its planned latency (whose
    // whole-GPU headroom covers the dispatcher's margin over its
    // estimates). Split gpulets keep the plain queue: they are most of the
    // solver's calls, and the chain costs more than it.
    const double late =
        m.lone_queue_dispatcher && ms.size() >= 2 && share_percent >= 100
            ? ExpiringBatchQueueLateFraction(rate, ms, m.slo_ms, spacing, 1.0)
            : LoneQueueLateFraction(m.lone_queue_expiry, rate, ms, m.slo_ms,
                                    spacing, m.queueing_tail);
    const bool fits = late <= m.queueing_tail;
    it = m.lone_queue_cache.emplace(std::move(key), fits).first;
  }
  if (!it->second) return std::nullopt;
  return g;
}

// SolveTimeShare; with `any_feasible`, the first feasible duty cycle found
// instead of the best one (and no caps): enough to tell whether one is.
std::optional<GpuletSchedule> Solve(const std::vector<Slice>& slices,
                                    double share_percent,
                                    const SliceLatencyFn& latency,
                                    bool any_feasible) {
  if (slices.empty()) return std::nullopt;
  const LatencyTable table(slices, share_percent, latency);
  double min_round = 0;
  double min_slo = std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < slices.size(); ++j) {
    min_round += table(j, 1);
    min_slo = std::min(min_slo, slices[j].demand->slo_ms);
  }
  const double hi = min_slo - min_round;
  if (hi < min_round) return std::nullopt;  // not even batch 1 fits
  std::optional<GpuletSchedule> best;
  GpuletSchedule trial;
  trial.share_percent = share_percent;
  trial.slices = slices;
  for (double d : DutyCycleCandidates(slices, table, min_round, min_slo)) {
    if (d < min_round * (1 - 1e-9) || d > hi * (1 + 1e-9)) continue;
    // Occupancy at d is at least min_round / d: a d that cannot beat the
    // best found needs no evaluation.
    if (best && min_round / d >= best->occupancy - 1e-12) continue;
    if (TryDutyCycle(slices, d, table, &trial) &&
        (!best || trial.occupancy < best->occupancy - 1e-12)) {
      best = trial;
      if (any_feasible) return best;
    }
  }
  if (best) {
    AddCaps(slices, table, min_slo, &*best);
    return best;
  }
  const ModelDemand& m = *slices.front().demand;
  if (slices.size() == 1 && PlansRotation(m)) {
    return SolveLoneBatchQueue(slices.front(), share_percent, table);
  }
  return std::nullopt;
}

}  // namespace

std::optional<GpuletSchedule> SolveTimeShare(const std::vector<Slice>& slices,
                                             double share_percent,
                                             const SliceLatencyFn& latency) {
  return Solve(slices, share_percent, latency, /*any_feasible=*/false);
}

bool TimeShareFeasible(const std::vector<Slice>& slices, double share_percent,
                       const SliceLatencyFn& latency) {
  return Solve(slices, share_percent, latency, /*any_feasible=*/true)
      .has_value();
}

}  // namespace tessera
