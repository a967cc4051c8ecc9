#pragma once

// Conversions between the proxy's tensor views and LibTorch tensors, shared
// by the LibTorch runners. Include only from the files that link LibTorch
// (torch_model_runner.cc, torch_group_runner.cc).

#include <torch/script.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tensor_layout.h"
#include "model_config.pb.h"

namespace tessera {

absl::StatusOr<c10::ScalarType> ToScalarType(DataType type);

// The device a runner uses: cuda:0 when `cuda` (FAILED_PRECONDITION where
// this LibTorch has no CUDA or sees no GPU), else the CPU.
absl::StatusOr<torch::Device> RunnerDevice(bool cuda);

// Runs `body` with a CUDA stream of its own from LibTorch's pool as the
// current stream and waits for that stream (operator groups: one stream per
// member, launched from the member's thread); on the CPU just runs it. The
// device-generic stream API: compiles against a CPU-only LibTorch.
void RunOnOwnStream(const torch::Device& device,
                    const std::function<void()>& body);
// Waits for the work queued on the device's current stream (e.g. copies to
// it) on this thread; nothing on the CPU.
void SynchronizeCurrentStream(const torch::Device& device);

// A CPU tensor over the view's bytes (not copied).
absl::StatusOr<torch::Tensor> TensorOverView(const TensorView& view);

// Copies `results` (CPU, contiguous) into [out, out + capacity) at 64-byte
// aligned offsets, checked against `model`'s output configs.
absl::StatusOr<std::vector<TensorView>> CopyOutputs(
    const ModelConfig& model, const std::vector<torch::Tensor>& results,
    uint8_t* out, size_t capacity);

}  // namespace tessera
