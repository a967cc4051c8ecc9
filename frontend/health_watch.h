#pragma once

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/async_call.h"
#include "frontend/health_service.h"
#include "health.grpc.pb.h"

namespace tessera {

// One grpc.health.v1.Health/Watch call on the asynchronous API: sends the
// status when the call starts and then each status it is given (the
// latest wins while a write is under way); after a status marked last it
// finishes the call OK. Deletes itself when the call is done (the client
// cancelled or the call finished) and no operation of it is pending.
class HealthWatch {
 public:
  using ServingStatus = HealthService::ServingStatus;

  // Arms one call; it arms the next when it is accepted.
  static void Arm(HealthService* service, HealthService::AsyncService* async,
                  grpc::ServerCompletionQueue* cq, AsyncCallCount* calls);

  // Called by HealthService (under its lock).
  void Send(ServingStatus status, bool last) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  HealthWatch(HealthService* service, HealthService::AsyncService* async,
              grpc::ServerCompletionQueue* cq, AsyncCallCount* calls);
  ~HealthWatch();

  void OnAccepted(bool ok);
  void OnWritten(bool ok);
  void OnFinished(bool ok);
  void OnDone(bool ok);
  // Starts the next write, or the finish after the last status.
  void Next() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a completed operation; true when the watch may be deleted.
  bool Completed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  HealthService* const service_;
  HealthService::AsyncService* const async_;
  grpc::ServerCompletionQueue* const cq_;
  AsyncCallCount* const calls_;
  grpc::ServerContext context_;
  grpc::health::v1::HealthCheckRequest request_;
  grpc::health::v1::HealthCheckResponse response_;
  grpc::ServerAsyncWriter<grpc::health::v1::HealthCheckResponse> writer_{
      &context_};
  AsyncOp<HealthWatch> accepted_{this, &HealthWatch::OnAccepted};
  AsyncOp<HealthWatch> written_{this, &HealthWatch::OnWritten};
  AsyncOp<HealthWatch> finished_{this, &HealthWatch::OnFinished};
  AsyncOp<HealthWatch> done_{this, &HealthWatch::OnDone};

  absl::Mutex mu_;
  // Operations started and not completed (the done notification included).
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<ServingStatus> wanted_ ABSL_GUARDED_BY(mu_);
  std::optional<ServingStatus> sent_ ABSL_GUARDED_BY(mu_);
  bool last_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // a write failed or done
};

}  // namespace tessera
