#pragma once

#include "admin.grpc.pb.h"
#include "common/log_rate_limiter.h"
#include "common/shared_secret.h"

namespace tessera {

class FrontendServer;

// The frontend's AdminService: status (plan, rates, backends), policy
// switch, re-plan. Every call needs the admin token (metadata
// "authorization: Bearer <token>", as the repository load/unload RPCs):
// without one UNAUTHENTICATED, with a wrong one PERMISSION_DENIED, and
// FAILED_PRECONDITION when the frontend has none. Converts to gRPC status
// at this boundary. Thread-safe.
class AdminServiceImpl final : public AdminService::Service {
 public:
  // `server` must outlive the service.
  AdminServiceImpl(FrontendServer* server, SharedSecret secret)
      : server_(server), secret_(std::move(secret)) {}

  grpc::Status GetStatus(grpc::ServerContext* context,
                         const GetStatusRequest* request,
                         AdminStatus* response) override;
  grpc::Status SetPolicy(grpc::ServerContext* context,
                         const SetPolicyRequest* request,
                         SetPolicyResponse* response) override;
  grpc::Status Replan(grpc::ServerContext* context,
                      const ReplanRequest* request,
                      ReplanResponse* response) override;

 private:
  absl::Status Authorize(const grpc::ServerContext& context) const;

  FrontendServer* server_;
  const SharedSecret secret_;
  // Refusals are logged a few per second at most.
  mutable LogRateLimiter refusal_log_{5};
};

}  // namespace tessera
