// libFuzzer target: a serialized KServe v2 ModelInferRequest, decoded
// against the shipped models' configs (lenet: FP32 images; bert_tiny: INT64
// ids and INT32 mask with value ranges) as the frontend does before
// batching, then every input view read end to end.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/model_repository.h"
#include "frontend/request_codec.h"
#include "grpc_service.pb.h"
#include "model_config.pb.h"

namespace {

std::vector<tessera::ModelConfig>* Configs() {
  static auto* configs = [] {
    auto* v = new std::vector<tessera::ModelConfig>();
    for (const char* name : {"lenet", "bert_tiny", "mobilenet_v3_small"}) {
      // Either format (mobilenet_v3_small's is Triton's).
      auto config = tessera::ModelRepository::ReadConfig(
          std::string(TESSERA_SOURCE_DIR) + "/models/" + name);
      if (config.ok()) v->push_back(*config);
    }
    return v;
  }();
  return configs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  for (const tessera::ModelConfig& config : *Configs()) {
    auto decoded = tessera::RequestCodec::Decode(request, config);
    if (!decoded.ok()) continue;
    // Every byte a view claims must be readable (ASan checks).
    uint64_t sum = 0;
    for (const auto& input : decoded->inputs) {
      for (char c : input) sum += static_cast<unsigned char>(c);
    }
    if (sum == 1) return 0;  // keeps the reads
  }
  return 0;
}
