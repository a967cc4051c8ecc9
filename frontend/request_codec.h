#pragma once

#include "absl/status/statusor.h"
#include "backend.pb.h"
#include "frontend/infer_call.h"
#include "grpc_service.pb.h"
#include "model_config.pb.h"

namespace tessera {

// Translates between the KServe v2 messages and the frontend's batched
// tensors.
class RequestCodec {
 public:
  // Validates `request` against `config` and returns its inputs in config
  // order. INVALID_ARGUMENT names the input and says what was expected:
  // missing, unknown or repeated inputs; wrong datatype, rank, shape or
  // element count; a batch dimension outside [1, max_batch_size];
  // raw and typed contents mixed; unknown requested outputs. The returned
  // views point into `request`, which must outlive them.
  static absl::StatusOr<DecodedRequest> Decode(
      const inference::ModelInferRequest& request, const ModelConfig& config);

  // Appends to `response` the rows [row_offset, row_offset + items) of each
  // requested output of `batch` (raw_output_contents).
  static absl::Status EncodeOutputs(const BatchResponse& batch, int row_offset,
                                    int items, const DecodedRequest& decoded,
                                    const ModelConfig& config,
                                    inference::ModelInferResponse* response);
};

}  // namespace tessera
