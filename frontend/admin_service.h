#pragma once

#include "admin.grpc.pb.h"

namespace tessera {

class FrontendServer;

// The frontend's AdminService: status (plan, rates, backends), policy
// switch, re-plan. Converts to gRPC status at this boundary. Thread-safe.
class AdminServiceImpl final : public AdminService::Service {
 public:
  // `server` must outlive the service.
  explicit AdminServiceImpl(FrontendServer* server) : server_(server) {}

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
  FrontendServer* server_;
};

}  // namespace tessera
