#pragma once

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "backend.pb.h"

namespace tessera {

// Where a batch's inputs go in one proxy slot, worked out before a byte is
// copied and checked as if the batch were hostile.
struct BatchLayout {
  struct Input {
    size_t offset = 0;  // from the slot's start, 64-byte aligned
    size_t bytes = 0;
  };
  std::vector<Input> inputs;  // in the batch's order
  size_t output_offset = 0;   // from the slot's start; the rest is output
};

// The layout of `batch` in a slot of `slot_bytes`. Each input's shape and
// dtype must need exactly the bytes it carries (INVALID_ARGUMENT for a
// negative dimension, an overflowing size or a size that differs); with
// `fabricate`, a shape-only batch's inputs take their shapes' size (the
// proxy fills zeros). RESOURCE_EXHAUSTED when the inputs do not fit.
absl::StatusOr<BatchLayout> LayOutBatch(const BatchRequest& batch,
                                        bool fabricate, size_t slot_bytes);

}  // namespace tessera
