#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/model_repository.h"
#include "proxy/model_runner.h"

namespace tessera {

// ModelRunner on LibTorch TorchScript modules. The only proxy source that
// includes torch headers; exceptions from LibTorch are caught here and
// returned as Status carrying the model name.
class TorchModelRunner : public ModelRunner {
 public:
  struct Options {
    // Intra-op threads (set explicitly: LibTorch's default here is 1).
    int num_threads = 1;
    // Run on the process's CUDA device (the GPU and MPS share the backend
    // chose through the environment). Fails at Create with
    // FAILED_PRECONDITION when this LibTorch has no CUDA or sees no GPU.
    bool cuda = false;
  };

  // Loads every model in `models` (name -> TorchScript path) with its
  // validated config. A model whose file does not load (corrupted,
  // truncated) is left out: ModelStatus() and Run() say why (UNAVAILABLE,
  // the error's last line), and the other models are served.
  static absl::StatusOr<std::unique_ptr<TorchModelRunner>> Create(
      const std::map<std::string, std::string>& model_paths,
      const std::map<std::string, ModelConfig>& configs,
      const Options& options);
  ~TorchModelRunner() override;

  absl::StatusOr<std::vector<TensorView>> Run(
      const std::string& model, const std::vector<TensorView>& inputs,
      uint8_t* out, size_t out_capacity, absl::Duration* exec_time) override;
  absl::Status ModelStatus(const std::string& model) const override;
  void Drop(const std::string& model) override;

 private:
  struct Impl;
  explicit TorchModelRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
