#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "backend.pb.h"
#include "plan.pb.h"

namespace tessera {

// Where a gpulet worker sends its batches.
class BatchSink {
 public:
  // `status` is OK iff the batch executed; `response` carries the outputs.
  using Callback =
      std::function<void(absl::Status status, BatchResponse response)>;
  virtual ~BatchSink() = default;
  // Sends `batch` (its batch_id is overwritten); `done` is called exactly
  // once, possibly before Send returns. Never blocks on the network.
  virtual void Send(BatchRequest batch, Callback done) = 0;
};

// The frontend's control of one backend daemon: what the plan coordinator
// and the heartbeats need. BackendClient is the gRPC one; tests use fakes.
class BackendControl : public BatchSink {
 public:
  virtual const std::string& id() const = 0;
  virtual const std::string& address() const = 0;
  virtual absl::StatusOr<NodeInfo> GetNodeInfo(absl::Duration timeout) = 0;
  virtual absl::StatusOr<ApplyPlanResponse> ApplyPlan(
      const Plan& plan, absl::Duration timeout) = 0;
  // Stops the backend's gpulets that plan `epoch` does not have.
  virtual absl::Status CommitPlan(int64_t epoch, absl::Duration timeout) = 0;
  // `request` tells the backend what the frontend routes to it (a
  // draining backend waits for that to be nothing).
  virtual absl::StatusOr<HealthResponse> Health(const HealthRequest& request,
                                                absl::Duration timeout) = 0;
};

}  // namespace tessera
