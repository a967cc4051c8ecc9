#include "proxy/emulated_outputs.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/data_type.h"

namespace tessera {

std::vector<uint64_t> InputRowChecksums(const std::vector<TensorView>& inputs,
                                        int64_t batch) {
  std::vector<uint64_t> row_sum(batch, 1469598103934665603ull);
  for (const TensorView& in : inputs) {
    if (in.size_bytes == 0) continue;
    const size_t row = in.size_bytes / batch;
    for (int64_t r = 0; r < batch; ++r) {
      uint64_t h = row_sum[r];
      const uint8_t* p = in.data + r * row;
      for (size_t i = 0; i < row; ++i) h = (h ^ p[i]) * 1099511628211ull;
      row_sum[r] = h;
    }
  }
  return row_sum;
}

absl::StatusOr<std::vector<TensorView>> WriteEmulatedOutputs(
    const ModelConfig& config, const std::vector<uint64_t>& row_sums,
    uint8_t* out, size_t capacity) {
  const int64_t batch = static_cast<int64_t>(row_sums.size());
  auto laid_out = LayOutTensors(config.output(), batch, out, capacity);
  if (!laid_out.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the proxy's output area is too small: ", laid_out.status().message()));
  }
  std::vector<TensorView> outputs = std::move(*laid_out);
  for (int o = 0; o < config.output_size(); ++o) {
    const TensorConfig& t = config.output(o);
    const TensorView& view = outputs[o];
    const size_t elem = DataTypeSize(t.data_type());
    const size_t per_row = batch == 0 ? 0 : ElementCount(view.shape) / batch;
    for (int64_t r = 0; r < batch; ++r) {
      for (size_t i = 0; i < per_row; ++i) {
        const uint64_t v = (row_sums[r] + i * 0x9E3779B97F4A7C15ull) >> 40;
        uint8_t* dst = view.data + (r * per_row + i) * elem;
        if (t.data_type() == TYPE_FP32) {
          const float f = static_cast<float>(v % 1000) / 1000.0f;
          std::memcpy(dst, &f, sizeof f);
        } else {
          const uint64_t n = v % 1000;
          std::memcpy(dst, &n, std::min(elem, sizeof n));
        }
      }
    }
  }
  return outputs;
}

}  // namespace tessera
