#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "batching/weighted_round_robin.h"
#include "frontend/gpulet_worker.h"
#include "frontend/request_monitor.h"

namespace tessera {

// Routes accepted calls to the gpulet workers of the plan in force. A model
// served by several gpulets has its calls split in proportion to the rates
// the plan assigns them (WeightedRoundRobin, by earliest due pick; equal
// weights when the plan gives no rates). Thread-safe.
class Router {
 public:
  // Every submitted call is counted in `monitor` (may be null; must
  // outlive the router), whether or not a gpulet serves its model yet.
  explicit Router(RequestMonitor* monitor = nullptr) : monitor_(monitor) {}

  // Replaces the routing table; returns the workers it no longer uses.
  std::vector<std::shared_ptr<GpuletWorker>> Install(
      std::vector<std::shared_ptr<GpuletWorker>> workers)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Hands `call` to a worker serving its model. On failure (no gpulet
  // serves the model, or the router stopped accepting: UNAVAILABLE) `call`
  // is left with the caller.
  absl::Status Submit(std::unique_ptr<InferCall>& call)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Submit() for a call that was already counted (handed over from a
  // gpulet a plan change retired).
  absl::Status Reroute(std::unique_ptr<InferCall>& call)
      ABSL_LOCKS_EXCLUDED(mu_);

  // From now on Submit refuses new calls (UNAVAILABLE: the frontend is
  // shutting down); calls already accepted are still rerouted.
  void StopAccepting() ABSL_LOCKS_EXCLUDED(mu_);

  // Shutdown's drain: waits until every worker's queue is empty and its
  // batches are back, or `until`; returns the calls still queued.
  size_t Drain(absl::Time until) const ABSL_LOCKS_EXCLUDED(mu_);

  bool HasPlan() const ABSL_LOCKS_EXCLUDED(mu_);
  // How long a call of `model` submitted now would find the calls ahead of
  // it waiting: the shortest GpuletWorker::QueueWait over the gpulets that
  // serve it (zero when none does).
  absl::Duration QueueWait(const std::string& model) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a gpulet of the plan in force serves `model` with a proxy that
  // loaded it (ModelReady, RepositoryIndex).
  bool Serves(const std::string& model) const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether the plan in force places `model` at all (loaded or not).
  bool Places(const std::string& model) const ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<GpuletWorker>> workers() const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Targets {
    std::vector<std::shared_ptr<GpuletWorker>> workers;
    WeightedRoundRobin choice;
    int loaded = 0;  // workers whose proxy loaded the model
  };
  RequestMonitor* const monitor_;
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<GpuletWorker>> workers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Targets> by_model_ ABSL_GUARDED_BY(mu_);
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace tessera
