#pragma once

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "backend.pb.h"
#include "backend/backend_metrics.h"
#include "backend/gpulet_table.h"
#include "backend/parked_batches.h"
#include "backend/restart_budget.h"
#include "common/clock.h"

namespace tessera {

// What a backend does when a proxy of the plan in force exits: which exited
// proxies to restart now and which to give up on (RestartBudget, logged and
// counted in tessera_backend_proxy_exits_total), and the batches that
// arrive for them meanwhile, held for the new proxy (ParkedBatches) or
// answered when their deadline passes, the restart is given up or the
// backend stops. The caller restarts the proxies and routes the batches it
// is given back. Thread-safe; takes no lock of its caller's, so the caller
// may hold its own while calling.
class ProxyRecovery {
 public:
  struct Options {
    // Off: no proxy is restarted, so no batch is held.
    bool enabled = true;
    RestartBudget::Options restart;
    ParkedBatches::Options parking;
  };

  ProxyRecovery(Options options, const Clock* clock, BackendMetrics* metrics)
      : options_(options),
        clock_(clock),
        metrics_(metrics),
        restarts_(options.restart),
        parked_(options.parking) {}

  // Whether the proxy of gpulet `id`, found at `route`, is restarted should
  // it exit: it serves the plan in force and its restarts were not given
  // up.
  bool WillRestart(const GpuletTable::Route& route, const std::string& id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Holds `batch` and its reply when its proxy (at `route`) has exited and
  // will be restarted, and there is room; false, leaving both untouched,
  // otherwise.
  bool Hold(const GpuletTable::Route& route, BatchRequest& batch,
            ParkedBatches::Reply& reply) ABSL_LOCKS_EXCLUDED(mu_);
  // The supervisor found the serving gpulets `exited` dead: returns those
  // to restart now. Those whose budget ran out are reported once and their
  // held batches answered UNAVAILABLE; held batches past their deadline are
  // answered DEADLINE_EXCEEDED.
  std::vector<std::string> Triage(const std::vector<std::string>& exited)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The batches held for `ids` (their proxies restarted), to route again.
  std::vector<ParkedBatches::Entry> Release(const std::vector<std::string>& ids)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A new plan is in force: every gpulet gets a fresh budget; returns every
  // held batch, to route under that plan.
  std::vector<ParkedBatches::Entry> PlanApplied() ABSL_LOCKS_EXCLUDED(mu_);
  // The backend stops: every held batch is answered UNAVAILABLE.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  int held() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const Options options_;
  const Clock* const clock_;
  BackendMetrics* const metrics_;  // thread-safe
  mutable absl::Mutex mu_;
  RestartBudget restarts_ ABSL_GUARDED_BY(mu_);
  ParkedBatches parked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
