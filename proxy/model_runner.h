#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/tensor_layout.h"
#include "model_config.pb.h"

namespace tessera {

// Executes the models of one gpulet. Implementations: TorchModelRunner
// (LibTorch on CPU, or CUDA where built for it) and, later, the emulated
// GPU. The interface is torch-free so only one .cc includes LibTorch.
// Not thread-safe: a proxy runs one batch at a time, as a device does.
class ModelRunner {
 public:
  virtual ~ModelRunner() = default;

  // Runs `model` on `inputs` (one per configured input, in config order,
  // validated by the caller). Writes the outputs, in config order, into
  // [out, out + out_capacity) at 64-byte aligned offsets and returns views
  // of them. `exec_time` receives the time spent in the model itself.
  virtual absl::StatusOr<std::vector<TensorView>> Run(
      const std::string& model, const std::vector<TensorView>& inputs,
      uint8_t* out, size_t out_capacity, absl::Duration* exec_time) = 0;

  // Why `model` cannot run here (its file failed to load: the proxy serves
  // its other models), or OK.
  virtual absl::Status ModelStatus(const std::string& /*model*/) const {
    return absl::OkStatus();
  }

  // Slowdown from what runs on the other partitions of the device, set by
  // the backend before each batch. Real devices slow down by themselves:
  // only the emulated device uses it.
  virtual void SetInterferenceFactor(double /*factor*/) {}

  // Frees `model` (unloaded from the gpulet): Run() refuses it from then
  // on. Unknown names are ignored.
  virtual void Drop(const std::string& /*model*/) {}
};

}  // namespace tessera
