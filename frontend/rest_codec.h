#pragma once

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpc_service.pb.h"

namespace tessera {

// Translates KServe v2 REST inference bodies (JSON, with Triton's
// binary-data extension) to and from the gRPC messages, so that REST calls
// go through the same validation as gRPC ones. Every input becomes a
// raw_input_contents entry (JSON numbers converted to the datatype's
// little-endian bytes).
class RestCodec {
 public:
  struct InferRequest {
    inference::ModelInferRequest request;
    // How outputs go back: as binary data after the JSON header when
    // named here, or when `binary_by_default` and not named in
    // `json_outputs`.
    std::set<std::string> binary_outputs;
    std::set<std::string> json_outputs;
    bool binary_by_default = false;
  };

  // Decodes `body`, of which the first `json_bytes` are the JSON header
  // (Inference-Header-Content-Length; -1: all of it) and the rest the
  // inputs' binary data in input order. INVALID_ARGUMENT names the field or
  // input at fault; UNIMPLEMENTED for shared-memory inputs.
  static absl::StatusOr<InferRequest> DecodeInferRequest(
      absl::string_view body, int64_t json_bytes, const std::string& model,
      const std::string& version);

  struct Body {
    std::string bytes;
    // Length of the JSON header when binary data follows it; -1: JSON only.
    int64_t json_bytes = -1;
  };
  // Encodes `response` as KServe v2 JSON (+ binary data as `how` asks).
  static absl::StatusOr<Body> EncodeInferResponse(
      const inference::ModelInferResponse& response, const InferRequest& how);
};

}  // namespace tessera
