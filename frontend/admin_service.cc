#include "frontend/admin_service.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status_util.h"
#include "frontend/frontend_server.h"
#include "spdlog/spdlog.h"

namespace tessera {

absl::Status AdminServiceImpl::Authorize(
    const grpc::ServerContext& context) const {
  if (secret_.empty()) {
    return absl::FailedPreconditionError(
        "the admin service is disabled on this frontend: start "
        "tessera_frontend with --admin_token_file");
  }
  absl::Status s = secret_.Check(context);
  if (int64_t more = 0; !s.ok() && refusal_log_.Allow(&more)) {
    spdlog::warn(
        "refused an admin call from {}: {}{}", context.peer(),
        std::string(s.message()),
        more > 0 ? absl::StrCat(" (", more, " more refusals not logged)") : "");
  }
  return s;
}

grpc::Status AdminServiceImpl::GetStatus(grpc::ServerContext* context,
                                         const GetStatusRequest*,
                                         AdminStatus* response) {
  if (absl::Status s = Authorize(*context); !s.ok()) return ToGrpcStatus(s);
  *response = server_->Status();
  return grpc::Status::OK;
}

grpc::Status AdminServiceImpl::SetPolicy(grpc::ServerContext* context,
                                         const SetPolicyRequest* request,
                                         SetPolicyResponse*) {
  if (absl::Status s = Authorize(*context); !s.ok()) return ToGrpcStatus(s);
  return ToGrpcStatus(server_->SetPolicy(request->policy()));
}

grpc::Status AdminServiceImpl::Replan(grpc::ServerContext* context,
                                      const ReplanRequest* request,
                                      ReplanResponse*) {
  if (absl::Status s = Authorize(*context); !s.ok()) return ToGrpcStatus(s);
  server_->RequestReplan(request->reason().empty() ? "admin request"
                                                   : request->reason());
  return grpc::Status::OK;
}

}  // namespace tessera
