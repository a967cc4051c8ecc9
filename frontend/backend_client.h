#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "backend.grpc.pb.h"
#include "common/shared_secret.h"
#include "frontend/backend_control.h"
#include "grpcpp/grpcpp.h"

namespace tessera {

// The frontend's connection to one backend daemon: unary calls for node
// info and plans, and one long-lived bidirectional Execute stream that
// carries every batch (not a call per batch). If the stream breaks, every
// batch in flight on it fails with UNAVAILABLE and the client reconnects in
// the background with exponential backoff. Thread-safe.
//
// The stream runs on gRPC's asynchronous API: a batch is written from the
// thread that formed it without waiting for the bytes to leave; results
// are read, and handed to their callbacks, by the thread that polls the
// completion queue the client was given (one of the frontend's event
// loops, which also serve the clients' calls: with one loop no event is
// handed between threads; see docs/benchmarks.md). Without one, the client
// polls a queue of its own.
class BackendClient final : public BackendControl {
 public:
  // How the client proves itself to the backend and checks the backend.
  struct Security {
    // Null: plaintext.
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    // Sent with every call when set (the backend's --cluster_token_file).
    SharedSecret secret;
  };

  // `cq` (may be null: the client runs a queue and a thread of its own)
  // must be polled by the caller's loop until after Shutdown.
  BackendClient(std::string id, std::string address,
                grpc::CompletionQueue* cq = nullptr,
                Security security = Security());
  ~BackendClient() override;

  const std::string& id() const override { return id_; }
  const std::string& address() const override { return address_; }

  absl::StatusOr<NodeInfo> GetNodeInfo(absl::Duration timeout) override;
  absl::StatusOr<ApplyPlanResponse> ApplyPlan(const Plan& plan,
                                              absl::Duration timeout) override;
  absl::Status CommitPlan(int64_t epoch, absl::Duration timeout) override;
  absl::StatusOr<HealthResponse> Health(const HealthRequest& request,
                                        absl::Duration timeout) override;

  // Sends `batch` (its batch_id is overwritten) on the stream; `done` is
  // called exactly once, possibly before Send returns, on the thread that
  // polls the queue or the caller's. Never blocks on the network.
  void Send(BatchRequest batch, Callback done) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // Fails pending batches and stops reconnecting.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class ExecuteStream;  // one Execute call

  // Starts a stream, waits for it to end, fails what was in flight on it,
  // backs off and starts the next, until Shutdown.
  void StreamLoop();
  // Called by a stream with each result it reads, and once when it ends.
  void Deliver(BatchResponse response) ABSL_LOCKS_EXCLUDED(mu_);
  void StreamDone(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  void FailPending(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string id_;
  const std::string address_;
  const SharedSecret secret_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<BackendService::Stub> stub_;
  grpc::CompletionQueue* cq_;  // the Execute streams' events
  std::unique_ptr<grpc::CompletionQueue> own_cq_;  // when not given one
  std::thread own_loop_;                           // polls own_cq_

  mutable absl::Mutex mu_;
  // The live stream, or null between streams. Shared so that Send and
  // Shutdown can use it outside mu_ while the loop lets go of it.
  std::shared_ptr<ExecuteStream> stream_ ABSL_GUARDED_BY(mu_);
  bool stream_done_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status stream_status_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Callback> pending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace tessera
