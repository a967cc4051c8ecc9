#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessera {

// Decides when the frontend re-plans, and why: an explicit request (the
// first plan, a policy switch, an admin command, a model loaded or
// unloaded), a backend lost (heartbeat misses), back, or restarted (it
// serves an older plan than the one in force), or observed rates that moved
// significantly from those the plan in force was made for. It does no I/O
// and reads no clock: the frontend feeds it heartbeats and rates. One
// reason is pending at a time (the first asked); the planner takes it,
// plans, and reports the outcome. A request made while a plan is being
// made (after the planner took its reason) asks for another plan: that
// plan may have read the cluster before it. Thread-safe.
class ReplanTrigger {
 public:
  struct Options {
    // RatesChanged's arguments; the defaults are FrontendConfig's.
    double replan_threshold = 0.25;
    double min_rate_rps = 1;
    double rate_window_s = 20;
    // Misses after which a backend counts as lost.
    int heartbeat_misses = 3;
  };
  ReplanTrigger(Options options, const std::vector<std::string>& backend_ids);

  // A pending reason as the planner takes it; `requests` counts every
  // request made before it was taken.
  struct Taken {
    std::string reason;  // empty: none pending
    int64_t requests = 0;
  };

  // Asks for a re-plan; kept only if none is pending.
  void Request(const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  // Asks for a re-plan, replacing a pending reason (a policy switch).
  void Override(const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  // The pending reason; empty: none.
  std::string Pending() const ABSL_LOCKS_EXCLUDED(mu_);
  // The pending reason, for the planner to plan for.
  Taken Take() const ABSL_LOCKS_EXCLUDED(mu_);
  // The attempt for `taken` ended. Success clears the pending reason
  // unless a request came after `taken` (then the latest of those is
  // pending); failure keeps a reason pending.
  void Finished(const Taken& taken, bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until a reason is pending, Stop() was called, or `timeout`.
  void WaitForRequest(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // One heartbeat of `backend`: `health` failed, or answered at
  // `backend_epoch`. `plan_epoch` is the plan in force (0: none yet, or a
  // plan is being applied, when epochs are in flux).
  void OnHeartbeat(const std::string& backend, const absl::Status& health,
                   int64_t backend_epoch, int64_t plan_epoch)
      ABSL_LOCKS_EXCLUDED(mu_);
  // `backend` answered that it is draining (shutting down): it is planned
  // around at once, as if lost, and counts as alive again only when it
  // answers without draining (restarted).
  void OnDraining(const std::string& backend) ABSL_LOCKS_EXCLUDED(mu_);
  bool Alive(const std::string& backend) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every backend, alive or not.
  std::map<std::string, bool> AliveBackends() const ABSL_LOCKS_EXCLUDED(mu_);

  // The rates (req/s) the plan in force was made for.
  void SetPlannedRates(std::map<std::string, double> rates)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::map<std::string, double> PlannedRates() const ABSL_LOCKS_EXCLUDED(mu_);
  // Compares `observed` rates, measured over `coverage` of the rate window,
  // with the planned ones and asks for a re-plan when they changed
  // significantly; returns whether it did. Rates over less than a quarter
  // window are too noisy to act on.
  bool CheckRates(const std::map<std::string, double>& observed,
                  double coverage) ABSL_LOCKS_EXCLUDED(mu_);
  // Compares `observed` rates, counted over the last `window_s` seconds,
  // with the planned ones and asks for a re-plan when one rose
  // significantly (falls are left to CheckRates); returns whether it did.
  bool CheckRises(const std::map<std::string, double>& observed,
                  double window_s) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct BackendState {
    bool alive = true;
    int misses = 0;
  };
  void RequestLocked(const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::string reason_ ABSL_GUARDED_BY(mu_);  // empty: none pending
  // Every request so far, and the reason of the latest.
  int64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
  std::string latest_reason_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, BackendState> backends_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, double> planned_rates_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
