#include "frontend/health_service.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status_util.h"
#include "frontend/health_watch.h"

namespace tessera {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

void HealthService::Arm(AsyncService* async, grpc::ServerCompletionQueue* cq,
                        AsyncCallCount* calls) {
  ArmAsyncUnary(calls, async, cq, &AsyncService::RequestCheck,
                [this](grpc::ServerContext*, const HealthCheckRequest* request,
                       HealthCheckResponse* response, UnaryFinish finish) {
                  auto status = Check(request->service());
                  if (!status.ok())
                    return finish(ToGrpcStatus(status.status()));
                  response->set_status(*status);
                  finish(grpc::Status::OK);
                });
  HealthWatch::Arm(this, async, cq, calls);
}

HealthService::ServingStatus HealthService::StatusOf(const std::string& service,
                                                     bool ready) const {
  if (!Known(service)) return HealthCheckResponse::SERVICE_UNKNOWN;
  if (shut_down_ || !ready) return HealthCheckResponse::NOT_SERVING;
  return HealthCheckResponse::SERVING;
}

absl::StatusOr<HealthService::ServingStatus> HealthService::Check(
    const std::string& service) const {
  if (!Known(service)) {
    return absl::NotFoundError(
        absl::StrCat("no service '", service, "' on this server"));
  }
  const bool ready = ready_();
  absl::MutexLock lock(&mu_);
  return StatusOf(service, ready);
}

void HealthService::Refresh() {
  const bool ready = ready_();
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  for (const auto& [watch, service] : watches_) {
    watch->Send(StatusOf(service, ready), /*last=*/false);
  }
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  shut_down_ = true;
  for (const auto& [watch, service] : watches_) {
    watch->Send(StatusOf(service, false), /*last=*/true);
  }
}

void HealthService::AddWatch(HealthWatch* watch, const std::string& service) {
  const bool ready = ready_();
  absl::MutexLock lock(&mu_);
  watches_[watch] = service;
  watch->Send(StatusOf(service, ready), /*last=*/shut_down_);
}

void HealthService::RemoveWatch(HealthWatch* watch) {
  absl::MutexLock lock(&mu_);
  watches_.erase(watch);
}

}  // namespace tessera
