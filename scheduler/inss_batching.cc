#include "scheduler/inss_batching.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "perfmodel/inss_model.h"
#include "scheduler/time_share_solver.h"

namespace tessera {

double InssBatching::ExecMs(const InssCluster& cluster,
                            const InssProvisioning& provisioning,
                            const std::vector<int>& batches, int slot,
                            int batch) {
  const double share = provisioning.share_percent[slot];
  const double solo = cluster.SoloMs(slot, batch, share);
  double excess = 0;
  if (cluster.interference() != nullptr) {
    const Placement self{cluster.slots()[slot].latency, batch, share};
    for (size_t j = 0; j < provisioning.gpu.size(); ++j) {
      if (static_cast<int>(j) == slot || batches[j] <= 0 ||
          provisioning.gpu[j] != provisioning.gpu[slot]) {
        continue;
      }
      const Placement other{cluster.slots()[j].latency, batches[j],
                            provisioning.share_percent[j]};
      excess += cluster.interference()->Factor(self, other) - 1.0;
    }
  }
  return InssModel::ExecMs(solo, excess);
}

double InssBatching::WorstMs(const InssCluster& cluster, int slot, int batch,
                             double rate_rps, double exec_ms, double backlog) {
  double worst = InssModel::WorstTaskMs(batch, rate_rps, exec_ms, backlog);
  if (cluster.slots()[slot].queueing_check) {
    worst += FixedBatchWaitMs(rate_rps * exec_ms / (1000.0 * batch), exec_ms,
                              batch, cluster.slots()[slot].queueing_tail,
                              cluster.slots()[slot].burst_tail,
                              cluster.slots()[slot].bulk_queue_wait);
  }
  return worst;
}

InssBatchResult InssBatching::Decide(const InssCluster& cluster,
                                     const InssProvisioning& provisioning,
                                     const std::vector<double>& rates_rps,
                                     const std::vector<double>& backlog,
                                     const std::vector<int>& initial_batch) {
  const int n = static_cast<int>(cluster.slots().size());
  InssBatchResult r;
  r.batch.assign(n, 0);
  r.exec_ms.assign(n, 0);
  r.capacity_rps.assign(n, 0);
  r.worst_ms.assign(n, 0);
  r.feasible.assign(n, false);
  std::vector<bool> planned(n, false);
  for (int i = 0; i < n; ++i) {
    planned[i] = rates_rps[i] > 0 && provisioning.gpu[i] >= 0;
    if (planned[i]) {
      r.batch[i] = initial_batch.empty() || initial_batch[i] <= 0
                       ? kDefaultBatch
                       : initial_batch[i];
    }
  }
  // (4a): InSS's m_i does not depend on b here (profiles give one size per
  // model), so memory is a per-device check.
  std::vector<int64_t> used(cluster.gpus(), 0);
  for (int i = 0; i < n; ++i) {
    if (planned[i])
      used[provisioning.gpu[i]] += cluster.slots()[i].memory_bytes;
  }
  auto memory_ok = [&](int i) {
    return cluster.gpu_memory_bytes() == 0 ||
           used[provisioning.gpu[i]] <= cluster.gpu_memory_bytes();
  };
  auto latency_ok = [&](int i, int b) {
    const double exec = ExecMs(cluster, provisioning, r.batch, i, b);
    return WorstMs(cluster, i, b, rates_rps[i], exec, backlog[i]) <=
           cluster.slots()[i].slo_ms;
  };
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      if (!planned[i] || !memory_ok(i)) continue;
      const int hi_limit =
          cluster.TrustedMaxBatch(i, provisioning.share_percent[i]);
      int lo = 1, hi = hi_limit, best = 0;
      while (lo <= hi) {
        const int mid = (lo + hi) / 2;
        if (latency_ok(i, mid)) {
          best = mid;
          lo = mid + 1;
        } else {
          hi = mid - 1;
        }
      }
      if (best > 0 && best != r.batch[i]) {
        r.batch[i] = best;
        changed = true;
      }
    }
    if (!changed) break;
  }
  r.ok = true;
  for (int i = 0; i < n; ++i) {
    if (!planned[i]) {
      r.batch[i] = 0;
      continue;
    }
    const InssModelSlot& s = cluster.slots()[i];
    const int b = r.batch[i];
    r.exec_ms[i] = ExecMs(cluster, provisioning, r.batch, i, b);
    r.capacity_rps[i] = InssModel::CapacityRps(b, r.exec_ms[i]);
    r.worst_ms[i] =
        WorstMs(cluster, i, b, rates_rps[i], r.exec_ms[i], backlog[i]);
    std::string why;
    if (!memory_ok(i)) {
      why = "its device's memory is exceeded (4a)";
    } else if (b > cluster.TrustedMaxBatch(i, provisioning.share_percent[i])) {
      why = absl::StrFormat("no profiled batch at a %.0f %% share",
                            provisioning.share_percent[i]);
    } else if (r.worst_ms[i] > s.slo_ms) {
      why = absl::StrFormat(
          "no batch size meets its %.1f ms SLO at a %.0f %% share (b = %d: "
          "%.1f ms) (4b)",
          s.slo_ms, provisioning.share_percent[i], b, r.worst_ms[i]);
    } else if (r.capacity_rps[i] < rates_rps[i]) {
      why = absl::StrFormat(
          "%.1f req/s exceed its capacity %.1f req/s at b = %d, %.0f %% (4c)",
          rates_rps[i], r.capacity_rps[i], b, provisioning.share_percent[i]);
    }
    r.feasible[i] = why.empty();
    if (!why.empty() && r.ok) {
      r.ok = false;
      r.failed_slot = i;
      r.why = why;
    }
  }
  return r;
}

}  // namespace tessera
