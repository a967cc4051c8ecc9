#pragma once

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "perfmodel/latency_model.h"

namespace tessera {

// What a policy must serve for one model: its rate and SLO, and its
// latency model on the cluster's device type.
struct ModelDemand {
  std::string name;
  double rate_rps = 0;
  double slo_ms = 0;
  int max_batch = 1;
  const LatencyModel* latency = nullptr;
  // ProfileFits::KeyOf the profile `latency` was built from, when the
  // options carry fits (null otherwise).
  const std::string* profile_key = nullptr;
  // Multiplies every latency of this model while planning (headroom).
  double latency_scale = 1.0;
  // The same on a gpulet that takes the whole GPU (no neighbour, so no
  // interference to cover): min(SharedRules.whole_gpu_latency_headroom,
  // latency_scale). 0: latency_scale.
  double whole_gpu_latency_scale = 0;
  // Apply SolveTimeShare's queueing bound (SharedRules.queueing_check) at
  // this tail (SharedRules.queueing_tail).
  bool queueing_check = true;
  double queueing_tail = 0.005;
  // The same for rounds that merge bursts (SharedRules.round_queueing_tail).
  double round_queueing_tail = 0.005;
  // The dispatcher's cap may exceed the nominal batch (SharedRules.burst_caps).
  bool burst_caps = true;
  // The tail of the burst bound (SharedRules.burst_bound and burst_tail);
  // 0: the bound is off.
  double burst_tail = 0;
  // SharedRules.burst_max_marginal_load.
  double burst_max_marginal_load = 1;
  // SharedRules.bulk_queue_wait: fixed-batch waits from BulkQueueWaitMs.
  bool bulk_queue_wait = false;
  // SharedRules.round_robin_arrivals: a batch-1 replica's wait from the
  // spacing the router's round robin gives its requests.
  bool round_robin_arrivals = false;
  // SharedRules.lone_batch_queue: fixed batches also checked by their
  // batch queue's late fraction (BatchQueueLateFraction).
  bool lone_batch_queue = false;
  // SharedRules.lone_queue_expiry: that batch queue as the dispatcher runs
  // it, expiring requests that cannot make their deadlines
  // (DispatchedQueueLateFraction).
  bool lone_queue_expiry = false;
  // SharedRules.lone_queue_dispatcher: from cap 2 as well, the shared
  // solver's whole-GPU lone gpulets as the dispatcher runs them
  // (ExpiringBatchQueueLateFraction).
  bool lone_queue_dispatcher = false;
  // Memo of SaturatedThroughput by (share, spacing) (filled lazily while
  // planning).
  mutable std::map<std::pair<double, int>, double> saturated_cache;
  // Memo of whether this model alone at a rate fits a share (SoloFits):
  // (rate, share) -> fits.
  mutable std::map<std::pair<double, double>, bool> solo_fits_cache;
  // Memo of whether a lone gpulet's batch queue keeps its late share within
  // the queueing tail (SolveTimeShare): (rate, spacing, L(1..cap)) -> fits.
  mutable std::map<std::tuple<double, int, std::vector<double>>, bool>
      lone_queue_cache;
  // Memo of planned latency for the partition sizes of AllowedShares()
  // (by index) and batches 1..max_batch; other shares are computed
  // directly.
  mutable std::vector<std::vector<double>> latency_cache;
};

// A share of a model's rate placed on a gpulet.
struct Slice {
  const ModelDemand* demand = nullptr;
  double rate_rps = 0;
  // Every request the router deals this gpulet is at least this many of
  // the model's arrivals after the last: the gpulet is one of that many
  // gpulets of the model with this very rate (WeightedRoundRobin keeps n
  // equal weights n picks apart). Read for a slice alone on its gpulet
  // (SolveTimeShare's batch queue); 1: its own Poisson stream.
  int arrival_spacing = 1;
};

}  // namespace tessera
