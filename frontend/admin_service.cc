#include "frontend/admin_service.h"

#include "common/grpc_status_util.h"
#include "frontend/frontend_server.h"

namespace tessera {

grpc::Status AdminServiceImpl::GetStatus(grpc::ServerContext*,
                                         const GetStatusRequest*,
                                         AdminStatus* response) {
  *response = server_->Status();
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::SetPolicy(grpc::ServerContext*,
                                         const SetPolicyRequest* request,
                                         SetPolicyResponse*) {
  return ToGrpcStatus(server_->SetPolicy(request->policy()));
}

grpc::Status AdminServiceImpl::Replan(grpc::ServerContext*,
                                      const ReplanRequest* request,
                                      ReplanResponse*) {
  server_->RequestReplan(request->reason().empty() ? "admin request"
                                                   : request->reason());
  return grpc::Status::OK;
}

}  // namespace tessera
