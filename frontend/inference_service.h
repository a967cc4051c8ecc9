#pragma once

#include <string>

#include "common/async_call.h"
#include "common/clock.h"
#include "common/model_repository.h"
#include "common/owned_threads.h"
#include "common/shared_secret.h"
#include "frontend/admission_control.h"
#include "frontend/frontend_metrics.h"
#include "frontend/model_control.h"
#include "frontend/router.h"
#include "grpc_service.grpc.pb.h"

namespace tessera {

// The client-facing KServe v2 gRPC service, on the asynchronous API: the
// frontend's event loops run the handlers, and a call waiting in a
// queue holds no thread. Validates requests, stamps deadlines (arrival +
// the model's SLO, or the client's deadline if sooner) and hands them to
// the router. Thread-safe.
class InferenceService {
 public:
  // All pointers must outlive the service.
  // `metrics` may be null. `control` (may be null: the repository RPCs
  // load/unload answer UNIMPLEMENTED) serves RepositoryModelLoad/Unload,
  // which require the metadata "authorization: Bearer <token>" of
  // `admin_secret`; with none they are refused (FAILED_PRECONDITION).
  // `admission` (may be null: no limits) admits ModelInfer calls before
  // they are decoded.
  InferenceService(const ModelRepository* repository, Router* router,
                   const Clock* clock, std::string server_version,
                   FrontendMetrics* metrics = nullptr,
                   ModelControl* control = nullptr,
                   SharedSecret admin_secret = SharedSecret(),
                   AdmissionControl* admission = nullptr)
      : repository_(repository),
        router_(router),
        clock_(clock),
        server_version_(std::move(server_version)),
        metrics_(metrics),
        control_(control),
        admin_secret_(std::move(admin_secret)),
        admission_(admission) {}

  // The generated service, every method on the asynchronous API.
  using AsyncService = inference::GRPCInferenceService::AsyncService;
  // Finishes a call with its status (exactly once, from any thread).
  using Finish = UnaryFinish;

  // Arms the first call of every method on `cq`; calls re-arm themselves
  // and run their handlers on the thread that polls `cq`.
  void Arm(AsyncService* async, grpc::ServerCompletionQueue* cq,
           AsyncCallCount* calls);

  // The handlers: each finishes its call once, inline or later.
  void ServerLive(grpc::ServerContext* context,
                  const inference::ServerLiveRequest* request,
                  inference::ServerLiveResponse* response, Finish finish);
  void ServerReady(grpc::ServerContext* context,
                   const inference::ServerReadyRequest* request,
                   inference::ServerReadyResponse* response, Finish finish);
  void ModelReady(grpc::ServerContext* context,
                  const inference::ModelReadyRequest* request,
                  inference::ModelReadyResponse* response, Finish finish);
  void ServerMetadata(grpc::ServerContext* context,
                      const inference::ServerMetadataRequest* request,
                      inference::ServerMetadataResponse* response,
                      Finish finish);
  void ModelMetadata(grpc::ServerContext* context,
                     const inference::ModelMetadataRequest* request,
                     inference::ModelMetadataResponse* response, Finish finish);
  void ModelInfer(grpc::ServerContext* context,
                  const inference::ModelInferRequest* request,
                  inference::ModelInferResponse* response, Finish finish);

  // Where an inference call came from: the peer's address and the
  // client's deadline (InfiniteFuture: none). A unary gRPC call's deadline
  // was set when the call arrived, so it tells how long the call waited in
  // gRPC (AdmissionControl::CheckBacklog); a stream's does not.
  struct CallOrigin {
    std::string peer;
    absl::Time client_deadline = absl::InfiniteFuture();
    bool deadline_marks_arrival = true;
  };
  // ModelInfer for any transport (gRPC, REST, streaming): the same
  // validation, admission, routing and metrics. `request` and `response`
  // must stay valid until `finish` has run.
  void Infer(const CallOrigin& origin,
             const inference::ModelInferRequest* request,
             inference::ModelInferResponse* response, Finish finish);

  // RepositoryModelLoad (`load`) or Unload for any transport:
  // `authorization` is the caller's "authorization" value (null: none),
  // `client_deadline` how long it waits for a plan (InfiniteFuture: at
  // most two minutes).
  void LoadOrUnload(bool load, const std::string* authorization,
                    const std::string& model, absl::Time client_deadline,
                    Finish finish);

  // Read-only views for the other transports.
  const ModelRepository& repository() const { return *repository_; }
  // Whether `model` can be served now: placed and not unloaded.
  bool ModelIsReady(const std::string& model) const;
  // The statistics report of ModelStatistics (empty name: every model).
  absl::StatusOr<inference::ModelStatisticsResponse> Statistics(
      const std::string& name, const std::string& version) const;
  // Triton's extensions: the model's config as Triton's ModelConfig, and
  // its cumulative statistics (NOT_FOUND for a model or version the
  // repository lacks).
  void ModelConfig(grpc::ServerContext* context,
                   const inference::ModelConfigRequest* request,
                   inference::ModelConfigResponse* response, Finish finish);
  void ModelStatistics(grpc::ServerContext* context,
                       const inference::ModelStatisticsRequest* request,
                       inference::ModelStatisticsResponse* response,
                       Finish finish);
  void RepositoryIndex(grpc::ServerContext* context,
                       const inference::RepositoryIndexRequest* request,
                       inference::RepositoryIndexResponse* response,
                       Finish finish);
  void RepositoryModelLoad(grpc::ServerContext* context,
                           const inference::RepositoryModelLoadRequest* request,
                           inference::RepositoryModelLoadResponse* response,
                           Finish finish);
  void RepositoryModelUnload(
      grpc::ServerContext* context,
      const inference::RepositoryModelUnloadRequest* request,
      inference::RepositoryModelUnloadResponse* response, Finish finish);

 private:
  const ModelRepository* repository_;
  Router* router_;
  const Clock* clock_;
  const std::string server_version_;
  FrontendMetrics* metrics_;
  ModelControl* control_;
  const SharedSecret admin_secret_;
  AdmissionControl* admission_;
  // Repository load/unload calls wait for a plan, off the loop thread.
  OwnedThreads control_threads_;

  // Checks the caller's token (the "authorization" value, null: none)
  // for the repository load/unload calls.
  absl::Status Authorize(const std::string* authorization) const;
};

}  // namespace tessera
