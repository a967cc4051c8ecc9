#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/async_call.h"
#include "health.grpc.pb.h"

namespace tessera {

class HealthWatch;

// grpc.health.v1.Health on gRPC's asynchronous API (the default service
// that gRPC offers runs on its callback API, whose threads poll every
// socket of the process: docs/benchmarks.md). The server ("") and each of
// `services` are SERVING while `ready` says so and NOT_SERVING otherwise;
// any other name is NOT_FOUND to Check and SERVICE_UNKNOWN to Watch. Check
// reads `ready` at every call; watchers hear of a change at the next
// Refresh. After Shutdown every name is NOT_SERVING and every watch ends
// (OK) after saying so. Thread-safe.
class HealthService {
 public:
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;
  using AsyncService = grpc::health::v1::Health::AsyncService;

  // `ready` is called on the event loops and by Refresh, without locks of
  // this class held.
  HealthService(std::function<bool()> ready, std::vector<std::string> services)
      : ready_(std::move(ready)), services_(services.begin(), services.end()) {}

  // Arms the first Check and Watch calls on `cq`; calls re-arm themselves.
  void Arm(AsyncService* async, grpc::ServerCompletionQueue* cq,
           AsyncCallCount* calls);

  // Reads readiness again and tells every watcher (each sends a change).
  void Refresh() ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_SERVING from now on; the watches end after saying so.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Check's answer for `service` now.
  absl::StatusOr<ServingStatus> Check(const std::string& service) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // A watch registers when its call starts and leaves when it is done;
  // Add sends it the status now.
  void AddWatch(HealthWatch* watch, const std::string& service)
      ABSL_LOCKS_EXCLUDED(mu_);
  void RemoveWatch(HealthWatch* watch) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  bool Known(const std::string& service) const {
    return service.empty() || services_.contains(service);
  }
  ServingStatus StatusOf(const std::string& service, bool ready) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::function<bool()> ready_;
  const absl::flat_hash_set<std::string> services_;
  mutable absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // Every watch with the service it watches.
  absl::flat_hash_map<HealthWatch*, std::string> watches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
