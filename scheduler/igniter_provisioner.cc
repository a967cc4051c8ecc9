#include "scheduler/igniter_provisioner.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "batching/weighted_round_robin.h"
#include "scheduler/time_share_solver.h"

namespace tessera {
namespace {

struct Item {
  int request;
  int batch;
  double lower_share;
  double rate_rps;
};

double Total(const std::vector<IgniterPlacement>& gpu) {
  double s = 0;
  for (const auto& p : gpu) s += p.share_percent;
  return s;
}

std::vector<IgniterResident> Residents(
    const std::vector<IgniterRequest>& requests,
    const std::vector<IgniterPlacement>& gpu) {
  std::vector<IgniterResident> r;
  for (const auto& p : gpu) {
    r.push_back({requests[p.request].workload, p.batch, p.share_percent});
  }
  return r;
}

// The planning wait (FixedBatchWaitMs) of a placement whose batches take
// t_ms.
double PlanningWait(const IgniterRequest& q, const IgniterPlacement& p,
                    double t_ms) {
  return FixedBatchWaitMs(p.rate_rps * t_ms / (1000.0 * p.batch), t_ms, p.batch,
                          q.queueing_tail, q.burst_tail, q.bulk_queue_wait);
}

// A prediction raised to the request's solo floor, when it has one.
double Floored(const IgniterRequest& q, const IgniterPlacement& p,
               double predicted_ms) {
  return q.solo_floor_ms
             ? std::max(predicted_ms, q.solo_floor_ms(p.batch, p.share_percent))
             : predicted_ms;
}

// IgniterRequest.whole_gpu_batch1_factor where gpu[i] runs batch 1 alone on its
// GPU at the whole share, else 1.
double AloneFactor(const IgniterRequest& q,
                   const std::vector<IgniterPlacement>& gpu, size_t i,
                   double r_max) {
  return gpu.size() == 1 && gpu[i].share_percent >= r_max - 1e-9 &&
                 gpu[i].batch == 1
             ? q.whole_gpu_batch1_factor
             : 1.0;
}

// gpu[i]'s latency as ALLOC plans it: `predicted_ms` floored and, at
// batch 1 alone at the whole share, with the whole-GPU headroom.
double Planned(const IgniterRequest& q,
               const std::vector<IgniterPlacement>& gpu, size_t i, double r_max,
               double predicted_ms) {
  return Floored(q, gpu[i], predicted_ms) * AloneFactor(q, gpu, i, r_max);
}

// SharedRules.lone_batch_queue: whether a partition of `batch` is also
// checked as its batch queue (from batch 2; batch 1 too with
// lone_queue_expiry, the dispatcher's queue).
bool ChecksBatchQueue(const IgniterRequest& q, int batch) {
  return q.lone_batch_queue && (batch > 1 || q.lone_queue_expiry);
}

// The largest rate at which a lone server with these batch latencies keeps
// its late fraction within the planning tail (bisection; 0 when none).
double LoneQueueMaxRps(const IgniterRequest& q,
                       const std::vector<double>& batch_ms) {
  const int cap = static_cast<int>(batch_ms.size());
  double lo = 0, hi = 1000.0 * cap / batch_ms.back();
  for (int it = 0; it < 30 && hi - lo > 1e-4 * hi; ++it) {
    const double mid = (lo + hi) / 2;
    (LoneQueueLateFraction(q.lone_queue_expiry, mid, batch_ms, q.slo_ms, 1,
                           q.queueing_tail) <= q.queueing_tail
         ? lo
         : hi) = mid;
  }
  return lo;
}

// SharedRules.lone_batch_queue: whether gpu[i]'s batch queue, a batch of
// k at ALLOC's prediction for k beside the same co-runners (floored),
// keeps its late fraction within the planning tail. `t_ms` is the
// prediction at its own batch.
bool LoneQueueFits(const IgniterModel& model,
                   const std::vector<IgniterRequest>& requests,
                   std::vector<IgniterPlacement> gpu, size_t i, double t_ms) {
  const IgniterRequest& q = requests[gpu[i].request];
  const int cap = gpu[i].batch;
  std::vector<double> batch_ms(cap, t_ms);
  const double r_max = model.hardware().max_share_percent;
  for (int k = 1; k < cap; ++k) {
    gpu[i].batch = k;
    batch_ms[k - 1] =
        Planned(q, gpu, i, r_max,
                model.Predict(Residents(requests, gpu))[i].inference_ms);
  }
  return LoneQueueLateFraction(q.lone_queue_expiry, gpu[i].rate_rps, batch_ms,
                               q.slo_ms, 1, q.queueing_tail) <= q.queueing_tail;
}

// Algorithm 2 on a copy of one GPU's residents; the caller rejects the GPU
// when the result's total passes r_max.
std::vector<IgniterPlacement> Alloc(const IgniterModel& model,
                                    const std::vector<IgniterRequest>& requests,
                                    std::vector<IgniterPlacement> gpu) {
  const double unit = model.hardware().share_unit_percent;
  const double r_max = model.hardware().max_share_percent;
  while (Total(gpu) <= r_max + 1e-9) {
    const auto pred = model.Predict(Residents(requests, gpu));
    bool violated = false;
    for (size_t i = 0; i < gpu.size(); ++i) {
      const IgniterRequest& q = requests[gpu[i].request];
      const double t = Planned(q, gpu, i, r_max, pred[i].inference_ms);
      gpu[i].predicted_ms = t;
      if (t > q.slo_ms / 2 ||
          (q.queueing_check && t + PlanningWait(q, gpu[i], t) > q.slo_ms &&
           !(ChecksBatchQueue(q, gpu[i].batch) &&
             LoneQueueFits(model, requests, gpu, i, t)))) {
        gpu[i].share_percent += unit;
        violated = true;
      }
    }
    if (!violated) break;
  }
  return gpu;
}

// FFD+: `fresh` at its r_lower on the first GPU from `first` with room
// (shares within r_max and under the partition cap), else a new GPU.
void PlaceFirstFit(const IgniterPlacement& fresh, size_t first,
                   int max_partitions_per_gpu, double r_max,
                   IgniterProvision* out) {
  for (size_t j = first; j < out->gpus.size(); ++j) {
    auto& gpu = out->gpus[j];
    if (max_partitions_per_gpu > 0 &&
        static_cast<int>(gpu.size()) >= max_partitions_per_gpu) {
      continue;
    }
    if (Total(gpu) + fresh.share_percent <= r_max + 1e-9) {
      gpu.push_back(fresh);
      return;
    }
  }
  out->gpus.push_back({fresh});
}

}  // namespace

std::vector<double> ReplicaRates(double rate_rps, double per_replica_rps) {
  std::vector<double> rates;
  double rest = rate_rps;
  while (rest > per_replica_rps + 1e-9) {
    rates.push_back(per_replica_rps);
    rest -= per_replica_rps;
  }
  // A remainder equal to a replica's rate but for rounding is one: equal
  // weights make the router rotate strictly.
  if (std::fabs(rest - per_replica_rps) <= 1e-9 * per_replica_rps) {
    rest = per_replica_rps;
  }
  rates.push_back(rest);
  return rates;
}

double RotationReplicaRps(const IgniterRequest& q, int batch, double batch_ms,
                          double max_rps, double min_rps,
                          const std::vector<double>& batch_latencies) {
  if (!q.queueing_check || !q.round_robin_arrivals) return 0;
  const bool batch_queue = ChecksBatchQueue(q, batch) &&
                           static_cast<int>(batch_latencies.size()) == batch;
  if (batch != 1 && !batch_queue) return 0;
  // Each of n replicas at R / n, its requests at least k of the model's
  // arrivals apart.
  auto fits_at = [&](int n, int k) {
    if (batch_queue) {
      return LoneQueueLateFraction(q.lone_queue_expiry, q.rate_rps / n,
                                   batch_latencies, q.slo_ms, k,
                                   q.queueing_tail) <= q.queueing_tail;
    }
    const double rho = q.rate_rps * batch_ms / (1000.0 * k * batch);
    return rho < 1 &&
           batch_ms + FixedBatchWaitMs(rho, batch_ms, batch, q.queueing_tail,
                                       q.burst_tail, q.bulk_queue_wait, k) <=
               q.slo_ms;
  };
  // Only splits whose replicas carry more than min_rps, and a bounded
  // search (a split into more replicas than this is no plan).
  constexpr int kMaxReplicas = 256;
  for (int n = 2; n <= kMaxReplicas && q.rate_rps / n > min_rps; ++n) {
    const double per = q.rate_rps / n;
    // k <= n: a split that fails in strict rotation fails.
    if (per > max_rps || !fits_at(n, n)) continue;
    const std::vector<int> spacing =
        MinRoundRobinSpacings(ReplicaRates(q.rate_rps, per));
    const int k = *std::min_element(spacing.begin(), spacing.end());
    if (k >= 2 && fits_at(n, k)) return per;
  }
  return 0;
}

absl::StatusOr<IgniterProvision> ProvisionIgniter(
    const IgniterModel& model, const std::vector<IgniterRequest>& requests,
    int max_gpus, int max_partitions_per_gpu, IgniterPacking packing) {
  const double r_max = model.hardware().max_share_percent;
  std::vector<Item> items;
  IgniterProvision out;
  for (size_t i = 0; i < requests.size(); ++i) {
    const IgniterRequest& q = requests[i];
    const IgniterWorkload& w = *q.workload;
    if (q.rate_rps <= 0) continue;
    // Fits one GPU: r_lower within r_max and ALLOC settles alone (r_lower
    // ignores the clock and, with queueing_check, the queue).
    auto fits_alone = [&](int batch, double rl, double rate) {
      if (rl > r_max) return false;
      const IgniterPlacement p{static_cast<int>(i), batch, rl, rate, 0, 0};
      return Total(Alloc(model, requests, {p})) <= r_max + 1e-9;
    };
    int b = model.ApproxBatch(w, q.slo_ms, q.rate_rps);
    double rl = b <= q.max_batch ? model.LowerShare(w, q.slo_ms, b) : INFINITY;
    if (fits_alone(b, rl, q.rate_rps)) {
      items.push_back({static_cast<int>(i), b, rl, q.rate_rps});
      continue;
    }
    // Too much for one GPU: whole-GPU replicas at the largest batch whose
    // solo t_inf fits half the SLO, each taking 90 % of its throughput.
    int best_b = 0;
    double best_h = 0, best_ms = 0;
    // Solo t_inf of batches 1..bb, and the same raised to the profile's
    // own latency (IgniterRules.latency_floor) for the rotation's batch
    // queue: near its capacity, a replica's Erlang queue admits a load
    // that the fit's error at a large batch would break.
    std::vector<double> batch_ms, floored_ms;
    // Each replica is alone on its GPU: at batch 1, the whole-GPU headroom.
    for (int bb = 1; bb <= q.max_batch; ++bb) {
      const auto p = model.Predict({{&w, bb, r_max}})[0];
      const double f = bb == 1 ? q.whole_gpu_batch1_factor : 1.0;
      const double ms = p.inference_ms * f;
      batch_ms.push_back(ms);
      floored_ms.push_back(
          q.solo_floor_ms
              ? std::max(p.inference_ms, q.solo_floor_ms(bb, r_max)) * f
              : ms);
      if (ms <= q.slo_ms / 2) {
        best_b = bb;
        best_h = p.throughput_rps / f;
        best_ms = ms;
      }
    }
    if (best_b == 0) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "model '%s' is unschedulable: even a whole GPU at batch 1 takes "
          "more than half its %.1f ms SLO",
          w.model, q.slo_ms));
    }
    if (!q.replicas) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "model '%s' (%.1f req/s) is unschedulable: one GPU cannot carry it "
          "and the paper's iGniter places a workload on one GPU "
          "(igniter.replicas is off)",
          w.model, q.rate_rps));
    }
    double per_replica = 0.9 * best_h;
    if (q.queueing_check) {
      // The busiest replica whose M/D/1 tail still fits the SLO
      // (bisection on the load).
      double lo = 0, hi = 1;
      for (int it = 0; it < 50; ++it) {
        const double mid = (lo + hi) / 2;
        const bool fits =
            best_ms + FixedBatchWaitMs(mid, best_ms, best_b, q.queueing_tail,
                                       q.burst_tail, q.bulk_queue_wait) <=
            q.slo_ms;
        (fits ? lo : hi) = mid;
      }
      double poisson = lo * 1000.0 * best_b / best_ms;
      if (ChecksBatchQueue(q, best_b)) {
        batch_ms.resize(best_b);
        poisson = std::max(poisson, LoneQueueMaxRps(q, batch_ms));
      }
      poisson = std::min(per_replica, poisson);
      floored_ms.resize(best_b);
      per_replica =
          std::max(poisson, RotationReplicaRps(q, best_b, best_ms, per_replica,
                                               poisson, floored_ms));
    }
    const std::vector<double> rates = ReplicaRates(q.rate_rps, per_replica);
    for (size_t r = 0; r + 1 < rates.size(); ++r) {
      out.gpus.push_back(
          {{static_cast<int>(i), best_b, r_max, rates[r], best_ms, r_max}});
    }
    const double rest = rates.back();
    b = model.ApproxBatch(w, q.slo_ms, rest);
    rl = b <= q.max_batch ? model.LowerShare(w, q.slo_ms, b) : INFINITY;
    if (!fits_alone(b, rl, rest)) {  // the residue takes a whole GPU
      out.gpus.push_back(
          {{static_cast<int>(i), best_b, r_max, rest, best_ms, r_max}});
    } else {
      items.push_back({static_cast<int>(i), b, rl, rest});
    }
  }
  const size_t whole = out.gpus.size();
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) {
                     return a.lower_share > b.lower_share;
                   });
  for (const Item& item : items) {
    const IgniterPlacement fresh{item.request,  item.batch, item.lower_share,
                                 item.rate_rps, 0,          0};
    if (packing == IgniterPacking::kFirstFitLower) {
      PlaceFirstFit(fresh, whole, max_partitions_per_gpu, r_max, &out);
      continue;
    }
    int best = -1;
    double best_inc = r_max;
    std::vector<IgniterPlacement> best_trial;
    for (size_t j = whole; j < out.gpus.size(); ++j) {
      if (max_partitions_per_gpu > 0 &&
          static_cast<int>(out.gpus[j].size()) >= max_partitions_per_gpu) {
        continue;
      }
      std::vector<IgniterPlacement> trial = out.gpus[j];
      trial.push_back(fresh);
      trial = Alloc(model, requests, std::move(trial));
      const double total = Total(trial);
      const double inc = total - Total(out.gpus[j]);
      if (total <= r_max + 1e-9 && inc < best_inc - 1e-9) {
        best = static_cast<int>(j);
        best_inc = inc;
        best_trial = std::move(trial);
      }
    }
    if (best >= 0) {
      out.gpus[best] = std::move(best_trial);
      continue;
    }
    auto alone = Alloc(model, requests, {fresh});
    if (Total(alone) > r_max + 1e-9) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "model '%s' (%.1f req/s, SLO %.1f ms) is unschedulable: a whole "
          "GPU at batch %d does not meet half its SLO",
          requests[item.request].workload->model, item.rate_rps,
          requests[item.request].slo_ms, item.batch));
    }
    out.gpus.push_back(std::move(alone));
  }
  if (static_cast<int>(out.gpus.size()) > max_gpus) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the workloads need %d GPUs under iGniter's provisioning; the "
        "cluster has %d",
        out.gpus.size(), max_gpus));
  }
  if (packing == IgniterPacking::kFirstFitLower) {
    for (auto& gpu : out.gpus) {
      const auto pred = model.Predict(Residents(requests, gpu));
      for (size_t i = 0; i < gpu.size(); ++i) {
        gpu[i].predicted_ms = Planned(requests[gpu[i].request], gpu, i, r_max,
                                      pred[i].inference_ms);
      }
    }
  }
  for (auto& gpu : out.gpus) {
    for (auto& p : gpu) {
      p.standby_share_percent = std::min(p.share_percent + 10, r_max);
    }
  }
  return out;
}

}  // namespace tessera
