#pragma once

#include <string>
#include <vector>

#include "scheduler/inss_cluster.h"
#include "scheduler/inss_provisioning.h"

namespace tessera {

// InSS's batch-size decision algorithm (BDA, Alg. 1) in the digest's
// corrected reading (Sec. 3.4 and pitfall 5: the flag means "a feasible
// batch was found"): with placement and shares fixed, each model gets the
// largest b in [1, min(32, trusted max)] for which
//   (4a) the device's memory holds its models and
//   (4b) Eq. 2's worst task (perfmodel/inss_model.h) meets the SLO,
// found by binary search (latency, throughput and memory rise with b);
// then (4c) b / t_inf >= lambda must hold at that b, else the model fails
// and the provisioning has to change (the actor is asked).
// t_inf carries the co-runners' interference at their current batch sizes
// (the digest: "t_inf must include interference from the current
// co-runners"); since a model's batch changes its neighbours' latency, the
// search runs in rounds (at most 4) until no batch changes, and the result
// is checked once more with the final batches.
// Eq. 2 assumes evenly spaced arrivals (InSS's own environment); under
// Poisson arrivals batches queue behind each other. With
// PolicyOptions::queueing_check (the default, as for the other policies)
// the worst task also waits the p99.5 wait of whole batches
// (FixedBatchWaitMs with rho = lambda t_inf / b); off, BDA is the paper's.
struct InssBatchResult {
  bool ok = false;
  std::vector<int> batch;            // per slot; 0: not planned
  std::vector<double> exec_ms;       // t_inf at the chosen batch
  std::vector<double> capacity_rps;  // b / t_inf
  std::vector<double> worst_ms;      // Eq. 2 worst task
  std::vector<bool> feasible;        // (4a)-(4c) hold for the slot
  // First failing slot and why (when !ok).
  int failed_slot = -1;
  std::string why;
};

class InssBatching {
 public:
  // The batch InSS's code starts from (the paper gives none).
  static constexpr int kDefaultBatch = 4;

  // `rates_rps` and `backlog` per slot (rate 0: not planned);
  // `initial_batch` per slot (0: kDefaultBatch).
  static InssBatchResult Decide(const InssCluster& cluster,
                                const InssProvisioning& provisioning,
                                const std::vector<double>& rates_rps,
                                const std::vector<double>& backlog,
                                const std::vector<int>& initial_batch);

  // t_inf of `slot` at `batch` beside the other slots placed on its device
  // at `batches`.
  // The worst task's latency (Eq. 2, plus the queueing term) of `slot`
  // at `batch` with execution time `exec_ms`.
  static double WorstMs(const InssCluster& cluster, int slot, int batch,
                        double rate_rps, double exec_ms, double backlog);

  static double ExecMs(const InssCluster& cluster,
                       const InssProvisioning& provisioning,
                       const std::vector<int>& batches, int slot, int batch);
};

}  // namespace tessera
