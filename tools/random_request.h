#pragma once

#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpc_service.grpc.pb.h"

namespace tessera {

// Fills `request` with random inputs of the shapes `meta` declares, at batch
// `batch`: FP32 standard normal, INT64 uniform in [0, 1000) (token ids),
// INT32 all ones (attention masks). INVALID_ARGUMENT for other datatypes.
// Used by the CLI client and the load generator.
absl::Status FillRandomRequest(const inference::ModelMetadataResponse& meta,
                               int batch, std::mt19937* rng,
                               inference::ModelInferRequest* request);

// Asks the server (ModelMetadata, 10 s deadline) for `model`'s inputs and
// returns a request with random inputs at `batch` (see FillRandomRequest).
absl::StatusOr<inference::ModelInferRequest> RandomRequestFor(
    inference::GRPCInferenceService::Stub* stub, const std::string& model,
    int batch, std::mt19937* rng);

// Makes `request` shape-only: drops its contents and sets the request
// parameter "tessera.shape_only" (the backend fabricates the data).
void MakeShapeOnly(inference::ModelInferRequest* request);

}  // namespace tessera
