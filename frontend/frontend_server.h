#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/model_repository.h"
#include "config.pb.h"
#include "frontend/backend_client.h"
#include "frontend/inference_service.h"
#include "frontend/router.h"
#include "grpcpp/server.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// The frontend process: KServe v2 service, backend connections, the
// scheduling policy and the gpulet workers. Start() serves at once (not
// ready); a planner thread then registers the backends, runs the policy on
// a cluster snapshot, applies the plan on the backends and installs the
// workers, retrying until it succeeds. Thread-safe.
class FrontendServer {
 public:
  struct Options {
    FrontendConfig config;
    std::string model_repository = "models";
    std::string listen = "0.0.0.0:8100";
    // Largest request accepted; larger ones get RESOURCE_EXHAUSTED.
    int max_message_bytes = 64 << 20;
    // Deadline of unary calls to backends (ApplyPlan waits for proxies to
    // load and warm up).
    absl::Duration backend_call_timeout = absl::Seconds(300);
    absl::Duration plan_retry_interval = absl::Seconds(1);
  };

  static absl::StatusOr<std::unique_ptr<FrontendServer>> Create(
      Options options, const Clock* clock = RealClock::Get());
  ~FrontendServer();

  // Starts serving and planning.
  absl::Status Start();
  // Port actually bound (useful with port 0).
  int port() const { return port_; }
  // Blocks until a plan is installed or `timeout` passes.
  bool WaitUntilReady(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // The plan in force (epoch 0 before the first).
  Plan current_plan() const ABSL_LOCKS_EXCLUDED(mu_);
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  FrontendServer(Options options, const Clock* clock,
                 std::unique_ptr<ModelRepository> repository,
                 std::unique_ptr<SchedulingPolicy> policy);
  void PlannerLoop();
  // One attempt: snapshot -> policy -> apply -> install workers.
  absl::Status PlanAndApply() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  const Clock* clock_;
  std::unique_ptr<ModelRepository> repository_;
  std::unique_ptr<SchedulingPolicy> policy_;
  std::vector<std::unique_ptr<BackendClient>> backends_;
  Router router_;
  InferenceService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  mutable absl::Mutex mu_;
  Plan plan_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread planner_;
};

}  // namespace tessera
