#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "backend.grpc.pb.h"
#include "backend/backend_metrics.h"
#include "backend/backend_node.h"
#include "backend/frontend_traffic.h"
#include "backend/gpulet_starter.h"
#include "backend/gpulet_table.h"
#include "backend/plan_diff.h"
#include "backend/proxy_recovery.h"
#include "backend/proxy_supervisor.h"
#include "common/clock.h"
#include "config.pb.h"

namespace tessera {

// The backend daemon's gRPC service: owns the node's devices and the proxy
// processes serving its gpulets, applies plans, and routes batches from
// the frontend's Execute stream to the right proxy.
//
// Plan changes are shadow swaps: ApplyPlan starts a new proxy for every new
// or changed gpulet (loaded and warm) while the old ones keep serving, and
// keeps gpulets the plan dropped routable as "retiring"; the frontend
// switches its routing, waits for its in-flight batches, and calls
// CommitPlan, which drains and stops the retiring proxies. When a device's
// memory cannot hold the old and new proxies at once, the old ones on that
// device are drained and stopped first (stop-then-start, logged and
// counted). Devices: cpu (cores split by share), cuda (MPS active-thread
// percentage per proxy, one MPS control daemon per GPU) and emulated GPUs.
// Thread-safe. BackendAsyncServer serves it over gRPC: the unary methods
// keep gRPC's handler signatures (the context is unused and may be null),
// and the Execute stream hands each batch to Route.
class BackendServiceImpl final {
 public:
  struct Options {
    BackendConfig config;  // validated by Create
    std::string model_repository;
    // How the gpulets' proxies are started, drained and stopped.
    GpuletStarter::Options proxies;
    // Most proxy processes one device may run under one plan (standby
    // shadows count); a plan asking for more is refused.
    int max_gpulets_per_device = 16;
    // How often the supervisor looks for proxies of the plan in force that
    // exited (0: no supervisor), and when it may restart them.
    absl::Duration supervise_period = absl::Milliseconds(100);
    RestartBudget::Options restart;
    // Batches for a gpulet whose proxy exited, held for its restart.
    ParkedBatches::Options parking;
    // Times the restart budget (null: the real clock).
    const Clock* clock = nullptr;
  };

  // Validates the config (ids, device kinds, cores) and loads the model
  // repository.
  static absl::StatusOr<std::unique_ptr<BackendServiceImpl>> Create(
      Options options);
  ~BackendServiceImpl();

  grpc::Status GetNodeInfo(grpc::ServerContext* context,
                           const GetNodeInfoRequest* request,
                           NodeInfo* response);
  grpc::Status ApplyPlan(grpc::ServerContext* context,
                         const ApplyPlanRequest* request,
                         ApplyPlanResponse* response);
  grpc::Status CommitPlan(grpc::ServerContext* context,
                          const CommitPlanRequest* request,
                          CommitPlanResponse* response);
  // Hands `batch` (read off an Execute stream) to its gpulet's proxy;
  // `reply` gets the result (or an error) exactly once, on a proxy reader
  // thread or inline, possibly before Route returns.
  void Route(BatchRequest batch, std::function<void(BatchResponse)> reply)
      ABSL_LOCKS_EXCLUDED(mu_);
  grpc::Status Health(grpc::ServerContext* context,
                      const HealthRequest* request, HealthResponse* response);

  // Prometheus exposition (tessera_backend_*) and readiness (every gpulet
  // of the plan in force has a live proxy) for the HTTP endpoint.
  std::string RenderMetrics() ABSL_LOCKS_EXCLUDED(mu_);
  bool Ready() const ABSL_LOCKS_EXCLUDED(mu_);

  // Shutdown's first step: stops the supervisor and waits, up to
  // `timeout` in all, for every proxy to finish the batches it holds and
  // those still arriving (the frontend plans around a backend that stops
  // answering heartbeats).
  void DrainProxies(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // Graceful shutdown's first step: Health says `draining` from now on, so
  // the frontend plans without this backend, which keeps serving what it
  // is sent and refuses plans that give it gpulets. Returns true once the
  // frontend moved away (FrontendTraffic::AwaitQuiet: its heartbeat says
  // its settled plan routes nothing here, or none came for `silence`, and
  // no batch arrived for `quiet`), false at `deadline`.
  bool AwaitFrontendLeft(absl::Duration quiet, absl::Duration silence,
                         absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // Stops the supervisor and every proxy. Call before destroying the gRPC
  // server's threads.
  void StopProxies() ABSL_LOCKS_EXCLUDED(mu_);

  // The supervisor's check (public for tests that drive it): a proxy of
  // the plan in force that exited is reaped and, within the restart
  // budget, restarted under the same gpulet id by applying the plan in
  // force again; the frontend's routing is unchanged. Its batches in
  // flight failed UNAVAILABLE marked gpulet_stopped (the frontend routes
  // their calls again); batches that arrive meanwhile are held
  // (ParkedBatches) and sent to the new proxy. Beyond the budget it stays
  // down: not ready, its held batches answered UNAVAILABLE, counted in
  // tessera_backend_proxy_exits_total{outcome="given_up"}.
  void HealExitedProxies() ABSL_LOCKS_EXCLUDED(apply_mu_, mu_);

 private:
  BackendServiceImpl(Options options, std::unique_ptr<BackendNode> node);
  // Refuses a plan over Options::max_gpulets_per_device on a device; logs
  // one that stops every gpulet of this node.
  absl::Status CheckPlanLimits(const Plan& plan,
                               const std::map<std::string, GpuletSpec>& wanted)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<ApplyPlanResponse> DoApplyPlan(const Plan& plan)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // At a commit: the models applied plans took off gpulets they kept
  // leave those gpulets' proxies (unless a later plan gave them back).
  void DropPendingModels() ABSL_EXCLUSIVE_LOCKS_REQUIRED(apply_mu_)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Sends each emulated gpulet the slowdown its neighbours cause.
  void UpdateInterference() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Routes each batch again (held while its proxy restarted).
  void RouteAll(std::vector<ParkedBatches::Entry> batches)
      ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  const Clock* const clock_;
  FrontendTraffic traffic_;
  const std::unique_ptr<BackendNode> node_;
  // Thread-safe; operator-group gpulets record into it from their
  // controller threads.
  mutable BackendMetrics metrics_;
  const GpuletStarter starter_;

  // Serialises plan changes; held across proxy start-up, never by the
  // serving path.
  absl::Mutex apply_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // The last plan applied (the supervisor re-applies it to restart a
  // crashed proxy).
  std::optional<Plan> applied_plan_ ABSL_GUARDED_BY(apply_mu_);
  // Gpulet id -> models applied plans took off it, dropped at the commit.
  std::map<std::string, std::set<std::string>> pending_drops_
      ABSL_GUARDED_BY(apply_mu_);
  // Which crashed proxies to restart, and their batches meanwhile.
  ProxyRecovery recovery_;
  mutable absl::Mutex mu_;
  GpuletTable table_ ABSL_GUARDED_BY(mu_);
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t swaps_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t stop_then_start_swaps_ ABSL_GUARDED_BY(mu_) = 0;
  // Last member: stopped before the rest is destroyed.
  std::unique_ptr<ProxySupervisor> supervisor_;
};

}  // namespace tessera
