#include "frontend/inference_service.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/data_type.h"
#include "common/grpc_status_util.h"
#include "common/status_macros.h"
#include "frontend/gpulet_worker.h"
#include "frontend/infer_stream.h"
#include "frontend/request_codec.h"
#include "frontend/triton_model_config.h"

namespace tessera {
namespace {

// Arms the first call of one method: `request` is the generated RequestX
// (declared in one of the async service's bases), `handle` its handler.
template <class Base, class Request, class Response>
void ArmHandler(
    InferenceService* service, AsyncCallCount* calls,
    InferenceService::AsyncService* async, grpc::ServerCompletionQueue* cq,
    void (Base::*request)(grpc::ServerContext*, Request*,
                          grpc::ServerAsyncResponseWriter<Response>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                          void*),
    void (InferenceService::*handle)(grpc::ServerContext*, const Request*,
                                     Response*, InferenceService::Finish)) {
  ArmAsyncUnary(calls, async, cq, request,
                [service, handle](grpc::ServerContext* c, const Request* r,
                                  Response* out, InferenceService::Finish f) {
                  (service->*handle)(c, r, out, std::move(f));
                });
}

void Done(const InferenceService::Finish& finish, const absl::Status& status) {
  finish(ToGrpcStatus(status));
}

void FillTensorMetadata(const TensorConfig& t,
                        inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(t.name());
  out->set_datatype(DataTypeWireName(t.data_type()));
  for (int64_t d : t.dims()) out->add_shape(d);
}

}  // namespace

void InferenceService::Arm(AsyncService* async, grpc::ServerCompletionQueue* cq,
                           AsyncCallCount* calls) {
  ArmHandler(this, calls, async, cq, &AsyncService::RequestServerLive,
             &InferenceService::ServerLive);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestServerReady,
             &InferenceService::ServerReady);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestModelReady,
             &InferenceService::ModelReady);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestServerMetadata,
             &InferenceService::ServerMetadata);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestModelMetadata,
             &InferenceService::ModelMetadata);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestModelInfer,
             &InferenceService::ModelInfer);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestModelConfig,
             &InferenceService::ModelConfig);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestModelStatistics,
             &InferenceService::ModelStatistics);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestRepositoryIndex,
             &InferenceService::RepositoryIndex);
  ArmHandler(this, calls, async, cq, &AsyncService::RequestRepositoryModelLoad,
             &InferenceService::RepositoryModelLoad);
  ArmHandler(this, calls, async, cq,
             &AsyncService::RequestRepositoryModelUnload,
             &InferenceService::RepositoryModelUnload);
  InferStream::Arm(this, async, cq, calls);
}

void InferenceService::ServerLive(grpc::ServerContext* context,
                                  const inference::ServerLiveRequest*,
                                  inference::ServerLiveResponse* response,
                                  Finish finish) {
  response->set_live(true);
  return Done(finish, absl::OkStatus());
}

void InferenceService::ServerReady(grpc::ServerContext* context,
                                   const inference::ServerReadyRequest*,
                                   inference::ServerReadyResponse* response,
                                   Finish finish) {
  response->set_ready(router_->HasPlan());
  return Done(finish, absl::OkStatus());
}

void InferenceService::ModelReady(grpc::ServerContext* context,
                                  const inference::ModelReadyRequest* request,
                                  inference::ModelReadyResponse* response,
                                  Finish finish) {
  auto version =
      repository_->ResolveVersion(request->name(), request->version());
  if (!version.ok()) return Done(finish, version.status());
  response->set_ready(ModelIsReady(request->name()));
  return Done(finish, absl::OkStatus());
}

bool InferenceService::ModelIsReady(const std::string& model) const {
  return !(control_ != nullptr && control_->IsUnloaded(model)) &&
         router_->Serves(model);
}

void InferenceService::ServerMetadata(
    grpc::ServerContext* context, const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* response, Finish finish) {
  response->set_name("tessera");
  response->set_version(server_version_);
  return Done(finish, absl::OkStatus());
}

void InferenceService::ModelMetadata(
    grpc::ServerContext* context,
    const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response, Finish finish) {
  auto version =
      repository_->ResolveVersion(request->name(), request->version());
  if (!version.ok()) return Done(finish, version.status());
  const ModelRepository::Entry* entry = repository_->Find(request->name());
  response->set_name(entry->config.name());
  for (int64_t v : entry->versions) response->add_versions(absl::StrCat(v));
  response->set_platform("pytorch_torchscript");
  for (const auto& t : entry->config.input()) {
    FillTensorMetadata(t, response->add_inputs());
  }
  for (const auto& t : entry->config.output()) {
    FillTensorMetadata(t, response->add_outputs());
  }
  return Done(finish, absl::OkStatus());
}

void InferenceService::ModelConfig(grpc::ServerContext* context,
                                   const inference::ModelConfigRequest* request,
                                   inference::ModelConfigResponse* response,
                                   Finish finish) {
  auto version =
      repository_->ResolveVersion(request->name(), request->version());
  if (!version.ok()) return Done(finish, version.status());
  *response->mutable_config() =
      TritonModelConfig(repository_->Find(request->name())->config);
  return Done(finish, absl::OkStatus());
}

void InferenceService::ModelStatistics(
    grpc::ServerContext* context,
    const inference::ModelStatisticsRequest* request,
    inference::ModelStatisticsResponse* response, Finish finish) {
  auto report = Statistics(request->name(), request->version());
  if (!report.ok()) return Done(finish, report.status());
  *response = std::move(*report);
  return Done(finish, absl::OkStatus());
}

absl::StatusOr<inference::ModelStatisticsResponse> InferenceService::Statistics(
    const std::string& name, const std::string& version) const {
  std::string resolved_version;
  if (!name.empty()) {
    ASSIGN_OR_RETURN(auto resolved, repository_->ResolveVersion(name, version));
    if (!version.empty()) resolved_version = absl::StrCat(resolved);
  } else if (!version.empty()) {
    return absl::InvalidArgumentError("a version needs a model name");
  }
  if (metrics_ == nullptr) return inference::ModelStatisticsResponse();
  return metrics_->statistics().Report(name, resolved_version);
}

void InferenceService::ModelInfer(grpc::ServerContext* context,
                                  const inference::ModelInferRequest* request,
                                  inference::ModelInferResponse* response,
                                  Finish finish) {
  Infer({context->peer(), absl::FromChrono(context->deadline())}, request,
        response, std::move(finish));
}

void InferenceService::Infer(const CallOrigin& origin,
                             const inference::ModelInferRequest* request,
                             inference::ModelInferResponse* response,
                             Finish finish) {
  const absl::Time arrival = clock_->Now();
  // Calls refused before routing count too (unknown names as "_unknown",
  // so bad requests cannot grow the label set).
  // The version label stays empty until the version resolves (client
  // strings would grow the label set).
  ServedCall labels;
  auto refuse = [&](const absl::Status& status) {
    if (metrics_ != nullptr) {
      const bool known = repository_->Find(request->model_name()) != nullptr;
      metrics_->RecordRequest(known ? request->model_name() : "_unknown",
                              status.code(), clock_->Now() - arrival,
                              absl::IsDeadlineExceeded(status), labels);
    }
    return Done(finish, status);
  };
  auto version = repository_->ResolveVersion(request->model_name(),
                                             request->model_version());
  if (!version.ok()) return refuse(version.status());
  labels.version = absl::StrCat(*version);
  if (control_ != nullptr && control_->IsUnloaded(request->model_name())) {
    return refuse(absl::UnavailableError(
        absl::StrCat("model '", request->model_name(),
                     "' is unloaded (RepositoryModelLoad loads it again)")));
  }
  const ModelRepository::Entry* entry =
      repository_->Find(request->model_name());
  const absl::Duration slo =
      absl::Microseconds(static_cast<int64_t>(entry->config.slo_ms() * 1000));
  AdmissionControl::Ticket ticket;
  if (admission_ != nullptr) {
    if (absl::Status s = admission_->CheckBacklog(
            slo, absl::StrCat(origin.peer, "/", request->model_name()),
            origin.deadline_marks_arrival ? origin.client_deadline
                                          : absl::InfiniteFuture(),
            arrival);
        !s.ok()) {
      return refuse(s);
    }
    // QueueWait locks every gpulet of the model: ask only when the rule
    // is on.
    if (admission_->options().max_queue_slo_fraction > 0) {
      if (absl::Status s = admission_->CheckQueue(
              slo, router_->QueueWait(request->model_name()));
          !s.ok()) {
        return refuse(s);
      }
    }
    auto admitted = admission_->Admit(
        request->model_name(), static_cast<int64_t>(request->ByteSizeLong()));
    if (!admitted.ok()) return refuse(admitted.status());
    ticket = std::move(*admitted);
  }
  auto decoded = RequestCodec::Decode(*request, entry->config);
  if (!decoded.ok()) return refuse(decoded.status());

  auto call = std::make_unique<InferCall>();
  call->finish = std::move(finish);
  call->request = request;
  call->response = response;
  call->config = &entry->config;
  call->version = absl::StrCat(*version);
  call->decoded = std::move(*decoded);
  call->arrival = arrival;
  call->metrics = metrics_;
  call->clock = clock_;
  call->admission = std::move(ticket);
  call->deadline = arrival + slo;
  // Without a client deadline this is "infinitely" far (saturating).
  call->deadline = std::min(call->deadline, origin.client_deadline);
  call->deadline = std::min(call->deadline, arrival + call->decoded.timeout);
  absl::Status routed = router_->Submit(call);
  if (!routed.ok()) FinishCall(std::move(call), routed);
}

void InferenceService::RepositoryIndex(
    grpc::ServerContext* context,
    const inference::RepositoryIndexRequest* request,
    inference::RepositoryIndexResponse* response, Finish finish) {
  for (const std::string& name : repository_->ModelNames()) {
    const ModelRepository::Entry* entry = repository_->Find(name);
    const bool unloaded = control_ != nullptr && control_->IsUnloaded(name);
    const bool ready =
        !unloaded && router_->Serves(name) && !entry->versions.empty();
    if (request->ready() && !ready) continue;
    auto* index = response->add_models();
    index->set_name(name);
    if (!entry->versions.empty()) {
      index->set_version(absl::StrCat(entry->versions.back()));
    }
    index->set_state(ready ? "READY" : "UNAVAILABLE");
    if (unloaded) {
      index->set_reason("unloaded (RepositoryModelLoad loads it again)");
    } else if (entry->versions.empty()) {
      index->set_reason("no version directory with model.pt");
    } else if (!ready && router_->Places(name)) {
      index->set_reason(
          "placed, but its proxy could not load the model file (see the "
          "backend's log)");
    } else if (!ready) {
      index->set_reason("not placed by the current plan");
    }
  }
  if (!request->ready()) {
    for (const auto& [name, why] : repository_->invalid()) {
      auto* index = response->add_models();
      index->set_name(name);
      index->set_state("UNAVAILABLE");
      index->set_reason(absl::StrCat("invalid config: ", why.message()));
    }
  }
  return Done(finish, absl::OkStatus());
}

absl::Status InferenceService::Authorize(
    const std::string* authorization) const {
  if (admin_secret_.empty()) {
    return absl::FailedPreconditionError(
        "model load/unload is disabled on this frontend: start "
        "tessera_frontend with --admin_token_file");
  }
  return admin_secret_.Check(authorization);
}

void InferenceService::LoadOrUnload(bool load, const std::string* authorization,
                                    const std::string& model,
                                    absl::Time client_deadline, Finish finish) {
  if (control_ == nullptr) {
    return Done(finish, absl::UnimplementedError(
                            "this server cannot load or unload models"));
  }
  absl::Status allowed = Authorize(authorization);
  if (!allowed.ok()) return Done(finish, allowed);
  if (repository_->Find(model) == nullptr) {
    return Done(finish, absl::NotFoundError(absl::StrCat(
                            "no model '", model, "' in the model repository")));
  }
  // Without a client deadline, wait at most two minutes for the plan.
  const absl::Time deadline =
      std::min(client_deadline, absl::Now() + absl::Seconds(120));
  // Waiting for a plan can take seconds: not on the loop thread. The
  // frontend's shutdown waits for this call to finish, and the control
  // gives up when the frontend stops.
  control_threads_.Start(
      [this, finish = std::move(finish), model, load, deadline] {
        Done(finish, load ? control_->LoadModel(model, deadline)
                          : control_->UnloadModel(model, deadline));
      });
}

namespace {

// The "authorization" metadata value of a gRPC call (null: none).
const std::string* AuthorizationOf(const grpc::ServerContext& context,
                                   std::string* storage) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return nullptr;
  storage->assign(it->second.data(), it->second.size());
  return storage;
}

}  // namespace

void InferenceService::RepositoryModelLoad(
    grpc::ServerContext* context,
    const inference::RepositoryModelLoadRequest* request,
    inference::RepositoryModelLoadResponse*, Finish finish) {
  if (!request->parameters().empty()) {
    return Done(finish,
                absl::InvalidArgumentError(
                    "load parameters (config overrides, files) are not "
                    "supported: models load from the repository as they "
                    "are"));
  }
  std::string authorization;
  LoadOrUnload(/*load=*/true, AuthorizationOf(*context, &authorization),
               request->model_name(), absl::FromChrono(context->deadline()),
               std::move(finish));
}

void InferenceService::RepositoryModelUnload(
    grpc::ServerContext* context,
    const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse*, Finish finish) {
  std::string authorization;
  LoadOrUnload(/*load=*/false, AuthorizationOf(*context, &authorization),
               request->model_name(), absl::FromChrono(context->deadline()),
               std::move(finish));
}

}  // namespace tessera
