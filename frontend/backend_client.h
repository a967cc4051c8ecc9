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

namespace tessera {

// The frontend's connection to one backend daemon: unary calls for node
// info and plans, and one long-lived bidirectional Execute stream that
// carries every batch (not a call per batch). If the stream breaks, every
// batch in flight on it fails with UNAVAILABLE and the client reconnects in
// the background with exponential backoff. Thread-safe.
class BackendClient {
 public:
  // `status` is OK iff the batch executed; `response` carries the outputs.
  using Callback =
      std::function<void(absl::Status status, BatchResponse response)>;

  BackendClient(std::string id, std::string address);
  ~BackendClient();

  const std::string& id() const { return id_; }
  const std::string& address() const { return address_; }

  absl::StatusOr<NodeInfo> GetNodeInfo(absl::Duration timeout);
  absl::StatusOr<ApplyPlanResponse> ApplyPlan(const Plan& plan,
                                              absl::Duration timeout);
  // Stops the backend's gpulets that plan `epoch` does not have.
  absl::Status CommitPlan(int64_t epoch, absl::Duration timeout);
  absl::StatusOr<HealthResponse> Health(absl::Duration timeout);

  // Sends `batch` (its batch_id is overwritten) on the stream; `done` is
  // called exactly once, possibly before Send returns.
  void Send(BatchRequest batch, Callback done) ABSL_LOCKS_EXCLUDED(mu_);
  // Fails pending batches and stops reconnecting.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Stream = grpc::ClientReaderWriter<BatchRequest, BatchResponse>;
  void StreamLoop();
  void FailPending(const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);

  const std::string id_;
  const std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<BackendService::Stub> stub_;

  // Held while writing to or replacing the stream; taken before mu_.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::unique_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Stream> stream_;  // guarded by write_mu_ for writes
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Callback> pending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace tessera
