#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "model_config.pb.h"

namespace tessera {

// A tensor in caller-owned memory (for the proxy: the shared region).
struct TensorView {
  std::string name;
  DataType data_type = TYPE_INVALID;
  std::vector<int64_t> shape;
  uint8_t* data = nullptr;
  size_t size_bytes = 0;
};

// Rounds up to the alignment tensors are laid out at in a proxy's slot.
inline size_t AlignUp64(size_t n) { return (n + 63) & ~size_t{63}; }

// Views of `tensors` (a model config's inputs or outputs) at batch size
// `batch`, laid out one after the other at 64-byte aligned offsets from
// `base`, as runners write their outputs. RESOURCE_EXHAUSTED, naming the
// tensor, if they need more than `capacity` bytes. The memory is not
// touched. `end_offset`, if set, receives the aligned offset after the last.
absl::StatusOr<std::vector<TensorView>> LayOutTensors(
    const google::protobuf::RepeatedPtrField<TensorConfig>& tensors,
    int64_t batch, uint8_t* base, size_t capacity,
    size_t* end_offset = nullptr);

// Bytes LayOutTensors needs for `tensors` at batch size `batch`.
size_t TensorLayoutBytes(
    const google::protobuf::RepeatedPtrField<TensorConfig>& tensors,
    int64_t batch);

}  // namespace tessera
