#include "common/tensor_layout.h"

#include "absl/strings/str_cat.h"
#include "common/data_type.h"

namespace tessera {
namespace {

std::vector<int64_t> BatchShape(const TensorConfig& t, int64_t batch) {
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  if (!shape.empty()) shape[0] = batch;
  return shape;
}

}  // namespace

absl::StatusOr<std::vector<TensorView>> LayOutTensors(
    const google::protobuf::RepeatedPtrField<TensorConfig>& tensors,
    int64_t batch, uint8_t* base, size_t capacity, size_t* end_offset) {
  std::vector<TensorView> views;
  size_t offset = 0;
  for (const TensorConfig& t : tensors) {
    TensorView view;
    view.name = t.name();
    view.data_type = t.data_type();
    view.shape = BatchShape(t, batch);
    view.size_bytes = ElementCount(view.shape) * DataTypeSize(t.data_type());
    offset = AlignUp64(offset);
    if (offset + view.size_bytes > capacity) {
      return absl::ResourceExhaustedError(
          absl::StrCat("tensor '", t.name(), "' at batch ", batch, " needs ",
                       view.size_bytes, " bytes at offset ", offset,
                       "; the area has ", capacity));
    }
    view.data = base + offset;
    offset += view.size_bytes;
    views.push_back(std::move(view));
  }
  if (end_offset != nullptr) *end_offset = AlignUp64(offset);
  return views;
}

size_t TensorLayoutBytes(
    const google::protobuf::RepeatedPtrField<TensorConfig>& tensors,
    int64_t batch) {
  size_t offset = 0;
  for (const TensorConfig& t : tensors) {
    offset = AlignUp64(offset) +
             ElementCount(BatchShape(t, batch)) * DataTypeSize(t.data_type());
  }
  return AlignUp64(offset);
}

}  // namespace tessera
