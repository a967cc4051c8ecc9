// libFuzzer target: a KServe v2 REST inference body. The first byte picks
// how much of the rest is the JSON header (0: all of it, else that many
// bytes, as Inference-Header-Content-Length would say); the body is
// decoded as the frontend's REST route does, then validated against the
// shipped models' configs like a gRPC request, and its answer encoded back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/text_proto.h"
#include "frontend/request_codec.h"
#include "frontend/rest_codec.h"
#include "model_config.pb.h"

namespace {

std::vector<tessera::ModelConfig>* Configs() {
  static auto* configs = [] {
    auto* v = new std::vector<tessera::ModelConfig>();
    for (const char* name : {"lenet", "bert_tiny"}) {
      tessera::ModelConfig config;
      if (tessera::ReadTextProto(std::string(TESSERA_SOURCE_DIR) + "/models/" +
                                     name + "/config.pbtxt",
                                 &config)
              .ok()) {
        v->push_back(config);
      }
    }
    return v;
  }();
  return configs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int64_t json_bytes = data[0] == 0 ? -1 : data[0];
  auto decoded =
      tessera::RestCodec::DecodeInferRequest(body, json_bytes, "m", "");
  if (!decoded.ok()) return 0;
  for (const tessera::ModelConfig& config : *Configs()) {
    auto checked = tessera::RequestCodec::Decode(decoded->request, config);
    if (!checked.ok()) continue;
    uint64_t sum = 0;
    for (const auto& input : checked->inputs) {
      for (char c : input) sum += static_cast<unsigned char>(c);
    }
    if (sum == 1) return 0;  // keeps the reads
  }
  // The inputs echoed back as outputs, JSON and binary.
  inference::ModelInferResponse response;
  for (int i = 0; i < decoded->request.inputs_size(); ++i) {
    auto* out = response.add_outputs();
    out->set_name(decoded->request.inputs(i).name());
    out->set_datatype(decoded->request.inputs(i).datatype());
    response.add_raw_output_contents(decoded->request.raw_input_contents(i));
  }
  (void)tessera::RestCodec::EncodeInferResponse(response, *decoded);
  return 0;
}
