#include "frontend/admin_server.h"

#include "absl/strings/str_cat.h"
#include "common/async_call.h"
#include "grpcpp/server_builder.h"
#include "spdlog/spdlog.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(
    const std::string& listen,
    std::shared_ptr<grpc::ServerCredentials> credentials,
    FrontendServer* frontend, SharedSecret secret) {
  std::unique_ptr<AdminServer> admin(
      new AdminServer(frontend, std::move(secret)));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, std::move(credentials), &admin->port_);
  builder.RegisterService(&admin->service_);
  if (GrpcPollsOneEpollSet())
    admin->unpolled_cq_ = builder.AddCompletionQueue();
  admin->server_ = builder.BuildAndStart();
  if (admin->server_ == nullptr || admin->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for admin RPCs on ", listen));
  }
  spdlog::info("frontend admin service on port {}", admin->port_);
  return admin;
}

void AdminServer::Shutdown(absl::Time deadline) {
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(deadline));
    server_.reset();
  }
  if (unpolled_cq_ != nullptr) {
    unpolled_cq_->Shutdown();
    RunCompletionQueue(unpolled_cq_.get());  // drains it
    unpolled_cq_.reset();
  }
}

}  // namespace tessera
