#include "frontend/inference_service.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/data_type.h"
#include "common/grpc_status_util.h"
#include "frontend/gpulet_worker.h"
#include "frontend/request_codec.h"

namespace tessera {
namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context,
                               const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

void FillTensorMetadata(const TensorConfig& t,
                        inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(t.name());
  out->set_datatype(DataTypeWireName(t.data_type()));
  for (int64_t d : t.dims()) out->add_shape(d);
}

}  // namespace

grpc::ServerUnaryReactor* InferenceService::ServerLive(
    grpc::CallbackServerContext* context, const inference::ServerLiveRequest*,
    inference::ServerLiveResponse* response) {
  response->set_live(true);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ServerReady(
    grpc::CallbackServerContext* context, const inference::ServerReadyRequest*,
    inference::ServerReadyResponse* response) {
  response->set_ready(router_->HasPlan());
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelReady(
    grpc::CallbackServerContext* context,
    const inference::ModelReadyRequest* request,
    inference::ModelReadyResponse* response) {
  auto version =
      repository_->ResolveVersion(request->name(), request->version());
  if (!version.ok()) return Done(context, version.status());
  response->set_ready(router_->Serves(request->name()));
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ServerMetadata(
    grpc::CallbackServerContext* context,
    const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* response) {
  response->set_name("tessera");
  response->set_version(server_version_);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelMetadata(
    grpc::CallbackServerContext* context,
    const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response) {
  auto version =
      repository_->ResolveVersion(request->name(), request->version());
  if (!version.ok()) return Done(context, version.status());
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
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelInfer(
    grpc::CallbackServerContext* context,
    const inference::ModelInferRequest* request,
    inference::ModelInferResponse* response) {
  const absl::Time arrival = clock_->Now();
  // Calls refused before routing count too (unknown names as "_unknown",
  // so bad requests cannot grow the label set).
  auto refuse = [&](const absl::Status& status) {
    if (metrics_ != nullptr) {
      const bool known = repository_->Find(request->model_name()) != nullptr;
      metrics_->RecordRequest(known ? request->model_name() : "_unknown",
                              status.code(), absl::Now() - arrival,
                              absl::IsDeadlineExceeded(status));
    }
    return Done(context, status);
  };
  auto version = repository_->ResolveVersion(request->model_name(),
                                             request->model_version());
  if (!version.ok()) return refuse(version.status());
  if (control_ != nullptr && control_->IsUnloaded(request->model_name())) {
    return refuse(absl::UnavailableError(
        absl::StrCat("model '", request->model_name(),
                     "' is unloaded (RepositoryModelLoad loads it again)")));
  }
  const ModelRepository::Entry* entry =
      repository_->Find(request->model_name());
  auto decoded = RequestCodec::Decode(*request, entry->config);
  if (!decoded.ok()) return refuse(decoded.status());

  auto call = std::make_unique<InferCall>();
  call->reactor = context->DefaultReactor();
  call->request = request;
  call->response = response;
  call->config = &entry->config;
  call->version = absl::StrCat(*version);
  call->decoded = std::move(*decoded);
  call->arrival = arrival;
  call->metrics = metrics_;
  call->deadline =
      arrival +
      absl::Microseconds(static_cast<int64_t>(entry->config.slo_ms() * 1000));
  // Without a client deadline this is "infinitely" far (saturating).
  call->deadline =
      std::min(call->deadline, absl::FromChrono(context->deadline()));
  grpc::ServerUnaryReactor* reactor = call->reactor;
  absl::Status routed = router_->Submit(call);
  if (!routed.ok()) FinishCall(std::move(call), routed);
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::RepositoryIndex(
    grpc::CallbackServerContext* context,
    const inference::RepositoryIndexRequest* request,
    inference::RepositoryIndexResponse* response) {
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
    } else if (!ready) {
      index->set_reason("not placed by the current plan");
    }
  }
  return Done(context, absl::OkStatus());
}

absl::Status InferenceService::Authorize(
    const grpc::CallbackServerContext* context) const {
  if (repository_token_.empty()) {
    return absl::FailedPreconditionError(
        "model load/unload is disabled on this frontend: start "
        "tessera_frontend with --admin_token_file");
  }
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end() ||
      std::string(it->second.data(), it->second.size()) !=
          "Bearer " + repository_token_) {
    return absl::PermissionDeniedError(
        "model load/unload needs the metadata 'authorization: Bearer "
        "<token>' with the frontend's admin token");
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* InferenceService::RunControl(
    grpc::CallbackServerContext* context, const std::string& model,
    absl::Status (ModelControl::*op)(const std::string&, absl::Time)) {
  if (control_ == nullptr) {
    return Done(context, absl::UnimplementedError(
                             "this server cannot load or unload models"));
  }
  absl::Status allowed = Authorize(context);
  if (!allowed.ok()) return Done(context, allowed);
  if (repository_->Find(model) == nullptr) {
    return Done(context,
                absl::NotFoundError(absl::StrCat("no model '", model,
                                                 "' in the model repository")));
  }
  // Without a client deadline, wait at most two minutes for the plan.
  const absl::Time deadline = std::min(absl::FromChrono(context->deadline()),
                                       absl::Now() + absl::Seconds(120));
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // Waiting for a plan can take seconds: not on a gRPC callback thread.
  // The server's shutdown waits for this call to finish, and the control
  // gives up when the frontend stops.
  std::thread([this, reactor, model, op, deadline] {
    const absl::Status status = (control_->*op)(model, deadline);
    reactor->Finish(ToGrpcStatus(status));
  }).detach();
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::RepositoryModelLoad(
    grpc::CallbackServerContext* context,
    const inference::RepositoryModelLoadRequest* request,
    inference::RepositoryModelLoadResponse*) {
  if (!request->parameters().empty()) {
    return Done(context,
                absl::InvalidArgumentError(
                    "load parameters (config overrides, files) are not "
                    "supported: models load from the repository as they "
                    "are"));
  }
  return RunControl(context, request->model_name(), &ModelControl::LoadModel);
}

grpc::ServerUnaryReactor* InferenceService::RepositoryModelUnload(
    grpc::CallbackServerContext* context,
    const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse*) {
  return RunControl(context, request->model_name(), &ModelControl::UnloadModel);
}

}  // namespace tessera
