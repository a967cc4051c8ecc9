#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_config.pb.h"

namespace tessera {
namespace testing {

// A tensor as raw row-major bytes.
struct RawTensor {
  DataType data_type = TYPE_INVALID;
  std::vector<int64_t> shape;
  std::string bytes;
};

// Runs a TorchScript file in this process with LibTorch: the reference the
// served outputs are compared against. The only test source that includes
// torch.
class ReferenceModel {
 public:
  static absl::StatusOr<std::unique_ptr<ReferenceModel>> Load(
      const std::string& path, int num_threads);
  ~ReferenceModel();

  // Outputs in the model's order (tensor or tuple elements).
  absl::StatusOr<std::vector<RawTensor>> Run(
      const std::vector<RawTensor>& inputs);

 private:
  struct Impl;
  explicit ReferenceModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace testing
}  // namespace tessera
