#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "scheduler/model_demand.h"
#include "scheduler/queue_wait.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Partition sizes of a GPU (percent), as in the gpulet paper: two-way
// splits 20/80, 40/60, 50/50 and the whole GPU.
inline const std::vector<double>& AllowedShares() {
  static const std::vector<double> shares = {20, 40, 50, 60, 80, 100};
  return shares;
}

// The partition sizes a policy may use on `devices`: the devices' own
// grid when they all declare the same one (a cpu node's multiples of
// 100/C), else the sizes of AllowedShares() that every device declaring a
// grid allows. Ascending; contains 100.
std::vector<double> ShareGrid(
    const std::vector<const DeviceSnapshot*>& devices);

// The schedule of one gpulet: a duty cycle and a batch size per slice.
struct GpuletSchedule {
  double share_percent = 0;
  double duty_cycle_ms = 0;
  std::vector<Slice> slices;
  std::vector<int> batches;  // per slice: nominal batch per round
  // Per slice: the batch-size cap for the dispatcher, the largest batch
  // with which a burst of this model still keeps every SLO of the round
  // (d + sum L with this slice at the cap <= every SLO); >= batches.
  std::vector<int> caps;
  std::vector<double> exec_ms;  // per slice, interference included
  double occupancy = 0;         // sum(exec) / duty cycle, in (0, 1]
};

// Latency of a slice's model at a batch size on the gpulet (the solo
// profile, possibly inflated by an interference factor).
using SliceLatencyFn =
    std::function<double(const Slice& slice, int batch, double share)>;

// Finds the duty cycle and batch sizes under which a gpulet of `share`
// serves every slice's rate within every SLO, with the time-sharing rules
// of Nexus as gpulet's artifact applies them:
//   batch b_j = max(1, ceil(r_j * d / 1000)) <= max batch   (rate served)
//   sum_j L_j(b_j, p) <= d                                   (round fits)
//   d + sum_j L_j(b_j, p) <= SLO_j for every j               (strict form:
//       a request may wait a whole round to be collected, then for every
//       batch of the round; the digest's pitfall 1: collection time counts)
//   sum_j L_j + W <= SLO_j                                 (queueing:
//       the papers' rules assume evenly spaced arrivals; under Poisson
//       arrivals a gpulet near full occupancy queues without bound. W is
//       RoundWaitMs (queue_wait.h; MD1WaitMs for a lone batch-1 model
//       that cannot batch a burst) with the round as service time and
//       rho = the busy fraction sum_j r_j L_j(b_j) / (1000 b_j))
// where the queueing bound fails, the burst bound may accept d instead
// (SharedRules.burst_bound, ModelDemand.burst_tail > 0, burst caps on):
//   d + sum_j L_j(q_j) <= SLO_j for every j, q_j <= max batch,
//   q_j = PoissonQuantile(r_j d / 1000, burst_tail)
//   sum_j r_j (L_j(q_j) - L_j(b_j)) / (1000 (q_j - b_j))
//       <= burst_max_marginal_load                   (batching drains it)
// (the work-conserving dispatcher takes a cycle's arrivals, up to the cap
// >= q_j, in the next batch: a request waits about one cycle, then for
// its round at the tail batches; where each extra request costs nearly
// its own interarrival time, a burst would queue round after round).
// A lone saturated model is the case d = L (2L <= SLO); a lone residue
// model the case d = 1000 b / r (L + 1000 b / r <= SLO).
// Candidate duty cycles are 1000 b / r_j and SLO - L_j(b) (others at batch
// 1) for every slice and batch size, plus a geometric grid between the
// shortest round and the tightest SLO;
// the feasible one with the lowest occupancy (most room left for others)
// wins. Where none is, a slice alone on the gpulet (under PlansRotation)
// may still be served back to back: its dispatcher's batch queue, with
// Erlang gaps at its arrival_spacing (Poisson at 1), keeps its late share
// within the queueing tail (LoneQueueLateFraction, at the cap the
// dispatcher gets, at most 8; not checked where the SLO allows batches
// past 8). Pure function; returns nullopt when no duty cycle is feasible.
std::optional<GpuletSchedule> SolveTimeShare(const std::vector<Slice>& slices,
                                             double share_percent,
                                             const SliceLatencyFn& latency);
// Whether SolveTimeShare finds a schedule: the same answer, returned at
// the first feasible duty cycle.
bool TimeShareFeasible(const std::vector<Slice>& slices, double share_percent,
                       const SliceLatencyFn& latency);

// Latency the policy plans with: the profile's L(b, p) times the model's
// latency_scale (headroom), or its whole_gpu_latency_scale at p = 100.
double PlannedLatency(const ModelDemand& m, int batch, double share);
// Planned solo latency of a slice (no interference).
double SoloLatency(const Slice& slice, int batch, double share);

// Largest batch with 2 L(b, p) <= SLO (a saturated gpulet), 0 if none.
int SaturatedBatch(const ModelDemand& m, double share);
// Requests per second a gpulet of `share` serving only this model sustains
// within its SLO: the largest rate SolveTimeShare accepts (bisection; at
// most back-to-back batches of SaturatedBatch). 0 if none. Memoised in
// the demand. `spacing` >= 2: the gpulet is dealt every spacing-th of the
// model's requests (Slice.arrival_spacing).
double SaturatedThroughput(const ModelDemand& m, double share, int spacing = 1);
// Whether gpulets of `m` are planned for the router's rotation over them
// (SharedRules.round_robin_arrivals and lone_batch_queue, with the
// queueing check).
bool PlansRotation(const ModelDemand& m);
// The spacing k its saturated gpulets of `share` get when a model's
// `rate_rps` is split into them, with their rate in `per_gpulet_rps`: the
// largest k <= kBatchQueueMaxSpacing such that at least k gpulets of the
// rate SaturatedThroughput(m, share, k) fit in rate_rps (so there are k
// equal gpulets, each dealt every k-th request or rarer) and t_k above
// the Poisson rate. 1 (and the Poisson rate) when none is, or without
// PlansRotation. (Since t_k grows with k, a smaller k can fit
// where a larger one does not, and not the reverse, except near the
// rounding of floor(rate / t_k): the search goes down from the largest.)
int RotationSpacing(const ModelDemand& m, double rate_rps, double share,
                    double* per_gpulet_rps);
// The fewest n >= 2 gpulets of `share` that carry `rate_rps` split evenly,
// rate_rps / n each, the router dealing each every n-th request (planned at
// spacing min(n, kBatchQueueMaxSpacing)), under PlansRotation; 0 when none
// of at most `most` gpulets does (or without PlansRotation).
int EvenSplitCount(const ModelDemand& m, double rate_rps, double share,
                   int most);
// sbp's and greedy's rule: the model's rate split into w whole GPUs at t
// (RotationSpacing's rate) leaves a residue; where no whole GPU carries it
// on its own stream, the even split over at most w + 1 GPUs; where one
// does, the even split over at most w GPUs, if one carries the rate
// (EvenSplitCount: equal gpulets, each dealt every n-th request, can carry
// more than t, the rate of a gpulet on its own stream or of k equal ones
// with floor(rate / t_k) >= k). 0 otherwise (no residue, or no such
// split).
int EvenSplitForResidue(const ModelDemand& m, double t);
// Whether SolveTimeShare finds a schedule for this model alone at `rate_rps`
// on a gpulet of `share`, planned solo. Memoised in the demand: gpulet's
// heuristic asks it for the same rates on every layout it tries.
bool SoloFits(const ModelDemand& m, double rate_rps, double share);

}  // namespace tessera
