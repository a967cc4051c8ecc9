#pragma once

// Reads a PyTorch `state_dict` saved by `torch.save` (the zip format,
// entries stored uncompressed) without LibTorch: the float32 tensors by
// name. Enough for the small fitted predictors of published artifacts; any
// other pickle content is an error that names what was found.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

struct CheckpointTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;  // Row-major, contiguous.
};

using StateDict = std::map<std::string, CheckpointTensor>;

// Parses a checkpoint held in memory (the file's bytes).
absl::StatusOr<StateDict> ParseTorchCheckpoint(const std::string& bytes);

// Reads and parses the checkpoint at `path`.
absl::StatusOr<StateDict> ReadTorchCheckpoint(const std::string& path);

}  // namespace tessera
