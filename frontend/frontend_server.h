#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admin.grpc.pb.h"
#include "common/async_call.h"
#include "common/backlog_bound.h"
#include "common/clock.h"
#include "common/heap_trimmer.h"
#include "common/http_endpoint.h"
#include "common/model_repository.h"
#include "common/poll_governor.h"
#include "common/shared_secret.h"
#include "common/tls_config.h"
#include "config.pb.h"
#include "frontend/admin_server.h"
#include "frontend/admission_control.h"
#include "frontend/backend_client.h"
#include "frontend/control_loops.h"
#include "frontend/frontend_metrics.h"
#include "frontend/health_service.h"
#include "frontend/inference_service.h"
#include "frontend/plan_coordinator.h"
#include "frontend/profile_store.h"
#include "frontend/replan_trigger.h"
#include "frontend/repository_control.h"
#include "frontend/request_monitor.h"
#include "frontend/rest_inference_service.h"
#include "frontend/router.h"
#include "frontend/status_reporter.h"
#include "frontend/unloaded_models.h"
#include "grpcpp/server.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// The frontend process: KServe v2 service, backend connections, request
// monitor, the scheduling policy and the gpulet workers. Start() serves at
// once (not ready). A planner thread makes the first plan (retrying until
// it succeeds), then re-plans when the request monitor sees rates change
// significantly (checked every replan period), when a backend stops
// answering heartbeats or comes back, or when one lost its plan
// (restarted). A plan change is a shadow swap: the backends start the new
// gpulets while the old ones serve, routing switches to the new workers,
// calls queued on the old workers move to the new ones, the old workers'
// in-flight batches finish, and only then are the old gpulets stopped
// (CommitPlan). Thread-safe.
class FrontendServer {
 public:
  struct Options {
    FrontendConfig config;
    std::string model_repository = "models";
    std::string listen = "0.0.0.0:8100";
    // Largest request accepted; larger ones get RESOURCE_EXHAUSTED.
    int max_message_bytes = 64 << 20;
    // Calls and request bytes held at once; beyond: RESOURCE_EXHAUSTED.
    AdmissionControl::Options admission;
    // Deadline of unary calls to backends (ApplyPlan waits for proxies to
    // load and warm up).
    absl::Duration backend_call_timeout = absl::Seconds(300);
    absl::Duration plan_retry_interval = absl::Seconds(1);
    // Shutdown (SIGTERM): how long accepted calls may take to be served
    // while new ones are refused.
    absl::Duration drain_timeout = absl::Seconds(10);
    // If set, every plan installed is written here (text format,
    // replaced atomically) once the backends committed it.
    std::string plan_file;
    // HTTP /metrics and /v2/health/{live,ready} on this port of the
    // listen host (0: any free port, -1: none).
    int http_port = -1;
    // host:port of the AdminService (empty: none); never the inference
    // port.
    std::string admin_listen;
    // Token the admin service and the KServe repository RPCs load/unload
    // require (metadata "authorization: Bearer <token>"); empty: those
    // RPCs are refused.
    SharedSecret admin_secret;
    // Sent with every call to the backends.
    SharedSecret cluster_secret;
    // TLS of the KServe (gRPC and HTTP) and admin ports; with a CA, of the
    // links to the backends too.
    TlsConfig tls;
    // Event-loop threads, each polling a completion queue of its own for
    // KServe calls and the streams of its share of the backends. One gives
    // the lowest latency (no event is handed between threads); more let
    // the frontend use more cores.
    int event_loops = 1;
    // How each event loop polls its queue before it sleeps
    // (RunCompletionQueue); by default it sleeps at once.
    PollOptions poll;
    // Hold a stream answer that would leave alone until the event loop's
    // queue runs dry (or a few events later), so answers made close
    // together share one socket write (DeferredWrites). Off by default:
    // it cut the frontend's CPU per refused stream request by about 12 %
    // at 40,000 refusals/s, but showed no goodput gain at 3x overload on
    // the one-core CPU cluster (docs/live-serving.md, Overload).
    bool coalesce_stream_answers = false;
  };

  using Stats = PlanCoordinator::Stats;

  static absl::StatusOr<std::unique_ptr<FrontendServer>> Create(
      Options options, const Clock* clock = RealClock::Get());
  ~FrontendServer();

  // Starts serving and planning.
  absl::Status Start();
  // Port actually bound (useful with port 0).
  int port() const { return port_; }
  // HTTP port actually bound (0 without HTTP).
  int http_port() const;
  // Ready: a plan is installed and every configured backend answers.
  bool Ready() const ABSL_LOCKS_EXCLUDED(mu_);
  // The Prometheus exposition (refreshes the plan and queue gauges).
  std::string RenderMetrics() ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until a plan is installed or `timeout` passes.
  bool WaitUntilReady(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // The plan in force (epoch 0 before the first).
  Plan current_plan() const ABSL_LOCKS_EXCLUDED(mu_);
  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // Asks the planner to re-plan now (e.g. from an admin command).
  void RequestReplan(const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);
  // Switches the scheduling policy (same options) and re-plans with it.
  absl::Status SetPolicy(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  // What the admin service reports.
  AdminStatus Status() const ABSL_LOCKS_EXCLUDED(mu_);
  // Admin port actually bound (0 without an admin service).
  int admin_port() const { return admin_ == nullptr ? 0 : admin_->port(); }
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The metrics/health HTTP endpoint and the admin service, when
  // configured.
  absl::Status StartHttp();
  absl::Status StartAdmin();
  FrontendServer(Options options, const Clock* clock,
                 std::unique_ptr<ModelRepository> repository,
                 ProfileStore profiles, PolicyOptions policy_options,
                 std::unique_ptr<SchedulingPolicy> policy);
  const Options options_;
  const Clock* clock_;
  std::unique_ptr<ModelRepository> repository_;
  const ProfileStore profiles_;
  const PolicyOptions policy_options_;
  // The event loops: each thread polls one completion queue for KServe
  // calls and its backends' streams (docs/ARCHITECTURE.md, threads).
  AsyncCallCount calls_;
  InferenceService::AsyncService async_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> cqs_;
  std::vector<std::thread> loops_;
  std::vector<std::unique_ptr<BackendClient>> backends_;
  RequestMonitor monitor_;
  FrontendMetrics metrics_;
  Router router_;
  ReplanTrigger trigger_;
  UnloadedModels unloaded_;
  // Marked by the event loops; read by admission.
  BacklogBound backlog_;
  AdmissionControl admission_;
  // Ticked by the heartbeat thread only.
  HeapTrimmer trimmer_;
  InferenceService service_;
  RestInferenceService rest_{&service_, {}};
  // grpc.health.v1.Health: the frontend is SERVING while Ready().
  HealthService health_{[this] { return Ready(); },
                        {inference::GRPCInferenceService::service_full_name()}};
  HealthService::AsyncService health_async_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  PlanCoordinator coordinator_;
  RepositoryControl repository_control_;
  StatusReporter reporter_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The backends as the coordinator and the control loops see them.
  std::vector<BackendControl*> controls_;
  // The planner and heartbeat threads; created by Start().
  std::unique_ptr<ControlLoops> control_;
  std::unique_ptr<HttpEndpoint> http_;
  std::unique_ptr<AdminServer> admin_;
};

}  // namespace tessera
