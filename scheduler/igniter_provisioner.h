#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/igniter_model.h"
#include "scheduler/queue_wait.h"

namespace tessera {

// One workload to provision: a model's coefficients, its rate and SLO.
struct IgniterRequest {
  const IgniterWorkload* workload = nullptr;
  double slo_ms = 0;
  double rate_rps = 0;
  int max_batch = 32;
  // Tessera's addition (IgniterRules.queueing_check; off = the paper):
  // the paper's half-SLO rule assumes evenly spaced arrivals (pitfall
  // P11); under Poisson arrivals a request also waits behind batches in
  // service. ALLOC then also grows a share until t_inf + W <= SLO, with
  // W = FixedBatchWaitMs(R t_inf / b, t_inf, b), the p99.5 wait of a
  // server running whole batches (the plan's batch size is also the
  // dispatcher's cap).
  bool queueing_check = false;
  // The tail of that wait and of the batch queue's late share below
  // (IgniterRules.queueing_tail).
  double queueing_tail = kQueueingTail;
  // The burst bound of that wait (FixedBatchWaitMs' burst_tail; 0: off).
  double burst_tail = 0;
  // That wait from the bulk-service queue (SharedRules.bulk_queue_wait).
  bool bulk_queue_wait = false;
  // SharedRules.round_robin_arrivals: batch-1 replicas may also be sized
  // as the router deals them requests (RotationReplicaRps).
  bool round_robin_arrivals = false;
  // SharedRules.lone_batch_queue: a placement the wait above refuses is
  // still accepted when its batch queue, each batch of k at its own
  // predicted latency (beside the same co-runners), keeps the share of
  // requests later than the SLO within the planning tail
  // (BatchQueueLateFraction); replicas are sized by the same rule.
  bool lone_batch_queue = false;
  // SharedRules.lone_queue_expiry: that batch queue as the dispatcher runs
  // it (DispatchedQueueLateFraction).
  bool lone_queue_expiry = false;
  // Tessera's addition: the measured solo latency L(b, p) (ms, headroom
  // included) below which no prediction goes (null: none). Eq. 11 fitted
  // to profiles undershoots at small shares and batches (docs/
  // scheduling.md), exactly where light loads are planned.
  std::function<double(int batch, double share_percent)> solo_floor_ms;
  // Tessera's addition (IgniterRules.whole_gpu_batch1_latency_headroom): the
  // predictions of a batch-1 placement alone on its GPU at the whole
  // share (no neighbour, no interference to cover) are multiplied by
  // this, the whole-GPU headroom over the latency headroom (<= 1; 1: the
  // same headroom everywhere).
  double whole_gpu_batch1_factor = 1;
  // The authors' code (IgniterRules.replicas): a workload no one GPU can
  // carry gets whole-GPU replicas plus a residue. Off (the paper): such a
  // workload is unschedulable.
  bool replicas = true;
};

// One workload (or replica) placed on a GPU.
struct IgniterPlacement {
  int request = 0;  // index into the requests
  int batch = 1;
  double share_percent = 0;
  double rate_rps = 0;
  double predicted_ms = 0;  // t_inf with the final co-runners
  // The standby share of the workload's shadow process (Sec. 4.2): the
  // authors' rule, min(r + 10, r_max) (digest, Sec. 6).
  double standby_share_percent = 0;
};

struct IgniterProvision {
  std::vector<std::vector<IgniterPlacement>> gpus;
};

// How workloads are packed onto GPUs.
enum class IgniterPacking {
  // Algorithms 1-2: least total-share growth after ALLOC (iGniter).
  kAlloc,
  // The paper's FFD+ baseline (Sec. 5.1): every workload keeps r_lower,
  // first fit in descending r_lower on the first GPU whose shares stay
  // within r_max; no ALLOC, so co-runners' interference is ignored.
  kFirstFitLower,
};

// The rates of a workload split as the authors' code does: whole replicas
// at `per_replica_rps` while more than one is left, then the rest (last).
// A rest equal to a replica's rate but for rounding is set equal to it.
std::vector<double> ReplicaRates(double rate_rps, double per_replica_rps);

// Tessera's addition (IgniterRequest.round_robin_arrivals, with
// queueing_check): the largest rate R / n (n >= 2, at most `max_rps` and
// more than `min_rps`, the M/D/1 sizing, which is always feasible) at
// which the replicas ProvisionIgniter makes for `q` at `batch`
// (ReplicaRates) pass t + W <= SLO, W the E_k/D/1 wait of a
// replica whose requests come at least k of the model's arrivals apart (k
// from the router's round robin over those rates, MinRoundRobinSpacings);
// 0 when none does or the rule is off. The M/D/1 sizing charges each
// replica as if it drew its own Poisson stream. From batch 2 it needs
// q.lone_batch_queue and `batch_latencies`, the solo latency of batches
// 1..batch (else 0): a replica passes when its batch queue with Erlang-k
// gaps keeps its late fraction within the planning tail
// (LoneQueueLateFraction). With q.lone_queue_expiry (and batch_latencies)
// batch 1 is checked that way too, as the dispatcher's queue.
double RotationReplicaRps(const IgniterRequest& q, int batch, double batch_ms,
                          double max_rps, double min_rps = 0,
                          const std::vector<double>& batch_latencies = {});

// iGniter's provisioning, Algorithms 1 and 2 of the paper, as the digest
// restates them (seeds/digests/igniter.md, Sec. 3 and pitfall P7):
//  1. per workload b = b_appr (Eq. 17, capped at max_batch) and r_lower
//     (Eq. 18);
//  2. workloads in descending r_lower; each goes to the GPU whose total
//     share grows least once ALLOC has re-solved it (ties: lowest index), or
//     to a new GPU when none can take it;
//  3. ALLOC: predict every resident with Eqs. 1-11; every resident above
//     half its SLO gains r_unit (all in the same round); repeat until none
//     violates or the shares pass r_max (the GPU is then rejected).
// Shares never shrink and nothing moves once placed.
//
// Choices where the paper is silent (pitfall P9): a workload whose r_lower
// exceeds r_max, or whose b_appr exceeds max_batch, is split as the authors'
// code does: replicas at r_max with the largest batch whose solo t_inf fits
// half the SLO, each carrying 90 % of its predicted throughput (or, for
// replicas with round_robin_arrivals, RotationReplicaRps where
// that is more), plus a residue workload provisioned normally. A workload
// alone on a new GPU also goes through ALLOC (r_lower ignores the clock
// drop, pitfall P10).
// RESOURCE_EXHAUSTED when more than `max_gpus` GPUs are needed or some
// workload cannot meet half its SLO even on a whole GPU.
// `max_partitions_per_gpu` > 0: a GPU holding that many workloads takes no
// more (PlanningRules.max_partitions_per_gpu). `packing`: kFirstFitLower
// packs as FFD+ instead (workloads too large for one GPU are split the
// same way); predicted_ms is then the model's prediction beside the final
// co-runners, which may exceed half the SLO.
absl::StatusOr<IgniterProvision> ProvisionIgniter(
    const IgniterModel& model, const std::vector<IgniterRequest>& requests,
    int max_gpus, int max_partitions_per_gpu = 0,
    IgniterPacking packing = IgniterPacking::kAlloc);

}  // namespace tessera
