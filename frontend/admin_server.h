#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/shared_secret.h"
#include "frontend/admin_service.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"

namespace tessera {

class FrontendServer;

// The frontend's admin port: AdminServiceImpl on a gRPC server of its own,
// never the inference port. Where gRPC polls one epoll set for the process
// it owns a completion queue nobody polls, which makes it a "hybrid" server
// whose synchronous handlers are then served by the frontend's event loop
// instead of a polling thread of its own. Shutdown is idempotent.
class AdminServer {
 public:
  // Listens on `listen` (host:port; port 0 picks one). `frontend` must
  // outlive the server.
  static absl::StatusOr<std::unique_ptr<AdminServer>> Start(
      const std::string& listen,
      std::shared_ptr<grpc::ServerCredentials> credentials,
      FrontendServer* frontend, SharedSecret secret);
  ~AdminServer() { Shutdown(absl::Now() + absl::Seconds(2)); }

  int port() const { return port_; }
  // Stops taking calls, waits for those open up to `deadline`, and drains
  // the unpolled queue.
  void Shutdown(absl::Time deadline);

 private:
  AdminServer(FrontendServer* frontend, SharedSecret secret)
      : service_(frontend, std::move(secret)) {}

  AdminServiceImpl service_;
  std::unique_ptr<grpc::ServerCompletionQueue> unpolled_cq_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tessera
