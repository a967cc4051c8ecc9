#pragma once

// What an emulated device writes as a model's outputs: output row r is a
// function of input row r (a checksum of its bytes), so a client can tell
// its rows from another request's, and the values look like a model's
// (floats in [0, 1), integers below 1000).

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tensor_layout.h"
#include "model_config.pb.h"

namespace tessera {

// One checksum per row of the batch, over every input's bytes of that row.
std::vector<uint64_t> InputRowChecksums(const std::vector<TensorView>& inputs,
                                        int64_t batch);

// Lays out `config`'s outputs for `row_sums.size()` rows in [out, out +
// capacity) and fills them from the checksums.
absl::StatusOr<std::vector<TensorView>> WriteEmulatedOutputs(
    const ModelConfig& config, const std::vector<uint64_t>& row_sums,
    uint8_t* out, size_t capacity);

}  // namespace tessera
