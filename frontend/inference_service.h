#pragma once

#include <string>

#include "common/clock.h"
#include "common/model_repository.h"
#include "frontend/frontend_metrics.h"
#include "frontend/model_control.h"
#include "frontend/router.h"
#include "grpc_service.grpc.pb.h"

namespace tessera {

// The client-facing KServe v2 gRPC service (callback API: a call waiting in
// a queue holds no thread). Validates requests, stamps deadlines (arrival +
// the model's SLO, or the client's deadline if sooner) and hands them to
// the router. Thread-safe.
class InferenceService final
    : public inference::GRPCInferenceService::CallbackService {
 public:
  // All pointers must outlive the service.
  // `metrics` may be null. `control` (may be null: the repository RPCs
  // load/unload answer UNIMPLEMENTED) serves RepositoryModelLoad/Unload,
  // which require the metadata "authorization: Bearer <repository_token>";
  // with an empty token they are refused (FAILED_PRECONDITION).
  InferenceService(const ModelRepository* repository, Router* router,
                   const Clock* clock, std::string server_version,
                   FrontendMetrics* metrics = nullptr,
                   ModelControl* control = nullptr,
                   std::string repository_token = "")
      : repository_(repository),
        router_(router),
        clock_(clock),
        server_version_(std::move(server_version)),
        metrics_(metrics),
        control_(control),
        repository_token_(std::move(repository_token)) {}

  grpc::ServerUnaryReactor* ServerLive(
      grpc::CallbackServerContext* context,
      const inference::ServerLiveRequest* request,
      inference::ServerLiveResponse* response) override;
  grpc::ServerUnaryReactor* ServerReady(
      grpc::CallbackServerContext* context,
      const inference::ServerReadyRequest* request,
      inference::ServerReadyResponse* response) override;
  grpc::ServerUnaryReactor* ModelReady(
      grpc::CallbackServerContext* context,
      const inference::ModelReadyRequest* request,
      inference::ModelReadyResponse* response) override;
  grpc::ServerUnaryReactor* ServerMetadata(
      grpc::CallbackServerContext* context,
      const inference::ServerMetadataRequest* request,
      inference::ServerMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelMetadata(
      grpc::CallbackServerContext* context,
      const inference::ModelMetadataRequest* request,
      inference::ModelMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelInfer(
      grpc::CallbackServerContext* context,
      const inference::ModelInferRequest* request,
      inference::ModelInferResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryIndex(
      grpc::CallbackServerContext* context,
      const inference::RepositoryIndexRequest* request,
      inference::RepositoryIndexResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelLoad(
      grpc::CallbackServerContext* context,
      const inference::RepositoryModelLoadRequest* request,
      inference::RepositoryModelLoadResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelUnload(
      grpc::CallbackServerContext* context,
      const inference::RepositoryModelUnloadRequest* request,
      inference::RepositoryModelUnloadResponse* response) override;

 private:
  const ModelRepository* repository_;
  Router* router_;
  const Clock* clock_;
  const std::string server_version_;
  FrontendMetrics* metrics_;
  ModelControl* control_;
  const std::string repository_token_;

  // Checks the caller's token for the repository load/unload RPCs.
  absl::Status Authorize(const grpc::CallbackServerContext* context) const;
  // Runs `op` off the gRPC thread and finishes the call with its status.
  grpc::ServerUnaryReactor* RunControl(
      grpc::CallbackServerContext* context, const std::string& model,
      absl::Status (ModelControl::*op)(const std::string&, absl::Time));
};

}  // namespace tessera
