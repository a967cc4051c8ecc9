#include "frontend/triton_model_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

// Both enums name their values TYPE_<T>; the numbers differ.
inference::DataType TritonDataType(DataType type) {
  inference::DataType out = inference::TYPE_INVALID;
  inference::DataType_Parse(DataType_Name(type), &out);
  return out;
}

// Triton's dims leave out the batch dimension of a batching model.
template <class Tensor>
void FillTensor(const TensorConfig& t, bool batching, Tensor* out) {
  out->set_name(t.name());
  out->set_data_type(TritonDataType(t.data_type()));
  for (int i = batching ? 1 : 0; i < t.dims_size(); ++i) {
    out->add_dims(t.dims(i));
  }
}

}  // namespace

inference::ModelConfig TritonModelConfig(const ModelConfig& config) {
  inference::ModelConfig out;
  out.set_name(config.name());
  out.set_platform("pytorch_libtorch");
  out.set_backend("pytorch");
  const bool batching = config.max_batch_size() > 0;
  out.set_max_batch_size(config.max_batch_size());
  for (const TensorConfig& t : config.input()) {
    FillTensor(t, batching, out.add_input());
  }
  for (const TensorConfig& t : config.output()) {
    FillTensor(t, batching, out.add_output());
  }
  if (batching) {
    out.mutable_dynamic_batching()->set_max_queue_delay_microseconds(
        config.has_max_queue_delay_ms()
            ? static_cast<uint64_t>(
                  std::llround(config.max_queue_delay_ms() * 1000))
            : 0);
  }
  (*out.mutable_parameters())["slo_ms"].set_string_value(
      absl::StrCat(config.slo_ms()));
  return out;
}

}  // namespace tessera
