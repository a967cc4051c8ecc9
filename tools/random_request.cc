#include "tools/random_request.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status_util.h"
#include "common/status_macros.h"
#include "grpcpp/grpcpp.h"

namespace tessera {

absl::Status FillRandomRequest(const inference::ModelMetadataResponse& meta,
                               int batch, std::mt19937* rng,
                               inference::ModelInferRequest* request) {
  request->set_model_name(meta.name());
  for (const auto& in : meta.inputs()) {
    auto* t = request->add_inputs();
    t->set_name(in.name());
    t->set_datatype(in.datatype());
    int64_t n = 1;
    for (int d = 0; d < in.shape_size(); ++d) {
      const int64_t dim = d == 0 ? batch : in.shape(d);
      t->add_shape(dim);
      n *= dim;
    }
    std::string* raw = request->add_raw_input_contents();
    if (in.datatype() == "FP32") {
      std::normal_distribution<float> dist;
      raw->resize(n * 4);
      float* p = reinterpret_cast<float*>(raw->data());
      for (int64_t i = 0; i < n; ++i) p[i] = dist(*rng);
    } else if (in.datatype() == "INT64") {
      std::uniform_int_distribution<int64_t> dist(0, 999);
      raw->resize(n * 8);
      int64_t* p = reinterpret_cast<int64_t*>(raw->data());
      for (int64_t i = 0; i < n; ++i) p[i] = dist(*rng);
    } else if (in.datatype() == "INT32") {
      raw->resize(n * 4);
      int32_t* p = reinterpret_cast<int32_t*>(raw->data());
      for (int64_t i = 0; i < n; ++i) p[i] = 1;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(meta.name(), ": input '", in.name(), "' datatype ",
                       in.datatype(), " is not supported"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<inference::ModelInferRequest> RandomRequestFor(
    inference::GRPCInferenceService::Stub* stub, const std::string& model,
    int batch, std::mt19937* rng) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  inference::ModelMetadataRequest meta_request;
  meta_request.set_name(model);
  inference::ModelMetadataResponse meta;
  grpc::Status s = stub->ModelMetadata(&context, meta_request, &meta);
  if (!s.ok()) {
    return absl::Status(
        FromGrpcStatus(s).code(),
        absl::StrCat("ModelMetadata(", model, "): ", s.error_message()));
  }
  inference::ModelInferRequest request;
  RETURN_IF_ERROR(FillRandomRequest(meta, batch, rng, &request));
  return request;
}

void MakeShapeOnly(inference::ModelInferRequest* request) {
  request->clear_raw_input_contents();
  for (auto& in : *request->mutable_inputs()) in.clear_contents();
  (*request->mutable_parameters())["tessera.shape_only"].set_bool_param(true);
}

}  // namespace tessera
