#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/proxy_handle.h"
#include "common/model_repository.h"
#include "common/tensor_layout.h"
#include "grpc_service.pb.h"

namespace tessera {

class TorchModelRunner;

// A batch-1 request of `config` with fixed pseudo-random FP32 inputs (the
// same for every call).
inference::ModelInferRequest RandomRequest(const ModelConfig& config);

// `request`'s inputs as a batch for a proxy.
BatchRequest ToBatchRequest(const std::string& model,
                            const inference::ModelInferRequest& request);

// Runs `batch` on `proxy` and waits; the proxy's exec time (us), or -1 if
// the batch failed. Exits the process if the proxy does not answer.
double RunOn(ProxyHandle* proxy, BatchRequest batch);

// The proxy's runner (TorchModelRunner) for one model in this process, on
// a batch-1 request like the benchmark's, warmed up as the proxy warms up.
class InProcessModel {
 public:
  // Null (the reason on stderr) if the model does not load.
  static std::unique_ptr<InProcessModel> Create(const ModelRepository& repo,
                                                const std::string& model,
                                                int threads);
  ~InProcessModel();

  // One run: its execution time (us) as the proxy measures it, or -1.
  double Run();

 private:
  InProcessModel() = default;
  std::unique_ptr<TorchModelRunner> runner_;
  std::string model_;
  inference::ModelInferRequest request_;  // inputs_ point into it
  std::vector<TensorView> inputs_;
  std::vector<uint8_t> out_;
};

}  // namespace tessera
