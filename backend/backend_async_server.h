#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "backend.grpc.pb.h"
#include "backend/backend_service.h"
#include "common/async_call.h"
#include "common/log_rate_limiter.h"
#include "common/owned_threads.h"
#include "common/poll_governor.h"
#include "common/shared_secret.h"
#include "common/tls_config.h"
#include "grpcpp/grpcpp.h"

namespace tessera {

// Serves a BackendServiceImpl on gRPC's asynchronous API from one event-loop
// thread polling one completion queue. No other thread of the process waits
// in gRPC's poller, so an event is never handed from the thread that polled
// it to another (with the callback or sync API every exchange costs about
// six thread switches, with this about one; docs/benchmarks.md).
//
// Execute streams and the quick unary methods (GetNodeInfo, Health) run on
// the loop thread; ApplyPlan and CommitPlan, which wait for proxies, run on
// a thread of their own each and answer from there. Results of the Execute
// stream are written from the proxy reader threads that produce them.
class BackendAsyncServer {
 public:
  struct Options {
    std::string listen;  // host:port; port 0 picks one
    int max_message_bytes = 64 << 20;
    // How the loop polls its queue before it sleeps (RunCompletionQueue);
    // by default it sleeps at once.
    PollOptions poll;
    // TLS of the port; with a CA, callers must present a certificate it
    // signed (mutual TLS).
    TlsConfig tls;
    // When set, every call must carry it (else UNAUTHENTICATED, or
    // PERMISSION_DENIED for a wrong token) before the service sees it.
    SharedSecret secret;
  };

  // Listens and starts the loop. `service` must outlive the server.
  static absl::StatusOr<std::unique_ptr<BackendAsyncServer>> Start(
      const Options& options, BackendServiceImpl* service);
  ~BackendAsyncServer();

  int port() const { return port_; }

  // Stops accepting calls, cancels the calls still open after `grace`,
  // waits for every call to end (its last operation done, plan calls
  // answered) and stops the loop. Idempotent. If calls are still alive 30 s
  // after the grace period (a batch stuck at a proxy), it says so and
  // leaves the loop running rather than shut the queue under them.
  void Shutdown(absl::Duration grace) ABSL_LOCKS_EXCLUDED(mu_);

  // The call objects alive on the queue (for the call classes in the .cc
  // file).
  AsyncCallCount* calls() { return &calls_; }
  // Where the plan calls (ApplyPlan, CommitPlan: they wait for proxies)
  // run, off the loop; joined at Shutdown.
  OwnedThreads* plan_threads() { return &plan_threads_; }
  // OK when the call may reach the service (see Options::secret); a
  // refusal is logged.
  grpc::Status Admit(const grpc::ServerContext& context,
                     const char* method) const;

 private:
  BackendAsyncServer() = default;

  BackendService::AsyncService async_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  std::thread loop_;
  int port_ = 0;
  SharedSecret secret_;
  // Refusals are logged a few per second at most.
  mutable LogRateLimiter refusal_log_{5};

  AsyncCallCount calls_;
  OwnedThreads plan_threads_;
  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tessera
