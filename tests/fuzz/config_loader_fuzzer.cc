// libFuzzer target: the text-format loaders. The first byte picks what the
// rest is parsed as, and each message goes through the validation it gets
// at load: a model config (ModelRepository::Validate), a latency profile
// (LatencyModel::FromProfile, then evaluated over batches and shares), a
// frontend config (ValidateFrontendConfig) or a plan (BackendNode::Resolve
// on a node of two emulated GPUs serving the emulated repository).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backend/backend_node.h"
#include "common/model_repository.h"
#include "common/text_proto.h"
#include "config.pb.h"
#include "frontend/frontend_config.h"
#include "model_config.pb.h"
#include "perfmodel/latency_model.h"
#include "plan.pb.h"
#include "profile.pb.h"

namespace {

const tessera::BackendNode* Node() {
  static const tessera::BackendNode* node = [] {
    const std::string root = TESSERA_SOURCE_DIR;
    tessera::BackendConfig config;
    config.set_id("backend0");
    config.set_profile_dir(root + "/profiles");
    for (int i = 0; i < 2; ++i) {
      tessera::DeviceConfig* gpu = config.add_devices();
      gpu->set_id("gpu" + std::to_string(i));
      gpu->set_kind(tessera::DEVICE_KIND_EMULATED);
      gpu->set_time_scale(10);
      gpu->set_memory_bytes(int64_t{11264} << 20);
    }
    auto loaded =
        tessera::BackendNode::Load(config, root + "/configs/emulated/models");
    return loaded.ok() ? loaded->release() : nullptr;
  }();
  return node;
}

template <class Message>
bool Parse(const uint8_t* data, size_t size, Message* message) {
  return tessera::ParseTextProto(
             std::string(reinterpret_cast<const char*>(data), size), message)
      .ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t kind = data[0] % 4;
  ++data;
  --size;
  switch (kind) {
    case 0: {
      tessera::ModelConfig config;
      if (Parse(data, size, &config)) {
        (void)tessera::ModelRepository::Validate(config);
      }
      break;
    }
    case 1: {
      tessera::ModelProfile profile;
      if (!Parse(data, size, &profile)) break;
      auto model = tessera::LatencyModel::FromProfile(profile);
      if (!model.ok()) break;
      for (int b : {1, 2, 7, 64}) {
        for (double share : {10.0, 33.0, 100.0}) {
          (void)model->LatencyMs(b, share);
        }
      }
      break;
    }
    case 2: {
      tessera::FrontendConfig config;
      if (Parse(data, size, &config)) {
        (void)tessera::ValidateFrontendConfig(&config);
      }
      break;
    }
    case 3: {
      tessera::Plan plan;
      if (Parse(data, size, &plan) && Node() != nullptr) {
        (void)Node()->Resolve(plan);
      }
      break;
    }
  }
  return 0;
}
