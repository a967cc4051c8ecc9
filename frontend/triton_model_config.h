#pragma once

#include "grpc_service.pb.h"
#include "model_config.pb.h"

namespace tessera {

// A model's configuration as Triton's ModelConfig message describes it
// (the ModelConfig RPC, for Triton clients such as perf_analyzer):
// platform "pytorch_libtorch", backend "pytorch", Triton's TYPE_* data
// types, dims without the batch dimension when the model batches, dynamic
// batching present (Tessera's policies choose the batch sizes), and the
// SLO as the parameter "slo_ms".
inference::ModelConfig TritonModelConfig(const ModelConfig& config);

}  // namespace tessera
