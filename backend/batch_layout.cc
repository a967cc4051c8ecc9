#include "backend/batch_layout.h"

#include "absl/strings/str_cat.h"
#include "common/client_text.h"
#include "common/data_type.h"
#include "common/tensor_layout.h"

namespace tessera {

absl::StatusOr<BatchLayout> LayOutBatch(const BatchRequest& batch,
                                        bool fabricate, size_t slot_bytes) {
  BatchLayout layout;
  size_t offset = 0;
  for (const Tensor& t : batch.inputs()) {
    offset = AlignUp64(offset);
    // A shape larger than its data would make the proxy read past it (into
    // other calls' tensors).
    auto needed = TensorBytes(t.shape(), t.data_type());
    if (!needed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", ClientText(t.name()), "': ", needed.status().message()));
    }
    if (!batch.shape_only() &&
        static_cast<uint64_t>(*needed) != t.data().size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", ClientText(t.name()), "': shape ",
          ShapeToString(
              std::vector<int64_t>(t.shape().begin(), t.shape().end())),
          " needs ", *needed, " bytes; the batch carries ", t.data().size()));
    }
    const size_t bytes =
        fabricate ? static_cast<size_t>(*needed) : t.data().size();
    if (offset > slot_bytes || bytes > slot_bytes - offset) {
      return absl::ResourceExhaustedError(
          absl::StrCat("batch for model '", ClientText(batch.model()),
                       "' exceeds the proxy's slot of ", slot_bytes, " bytes"));
    }
    layout.inputs.push_back({offset, bytes});
    offset += bytes;
  }
  layout.output_offset = std::min(AlignUp64(offset), slot_bytes);
  return layout;
}

}  // namespace tessera
