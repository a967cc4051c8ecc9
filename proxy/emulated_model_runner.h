#pragma once

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "model_config.pb.h"
#include "perfmodel/latency_model.h"
#include "proxy/model_runner.h"

namespace tessera {

// The emulated GPU device: executes no model. A batch of size b of model m
// completes after
//   L_m(b, share) x interference factor x time_scale x noise
// where L comes from the model's emulated profile, the interference factor
// is set by the backend per batch (what runs on the other partitions of
// the same emulated GPU), and noise is log-normal with mean 1 and the
// configured coefficient of variation. Outputs have the configured shapes
// and are filled deterministically from the inputs' bytes (inputs without
// data, as in shape-only mode, count as zeros). Not thread-safe, like any
// ModelRunner.
class EmulatedModelRunner : public ModelRunner {
 public:
  struct Options {
    double share_percent = 100;
    double time_scale = 1;
    double noise_cv = 0;
    uint64_t seed = 1;
    // Waits for the emulated latency; injected so tests need not sleep.
    // Default: absl::SleepFor.
    std::function<void(absl::Duration)> sleep;
  };

  // `profiles` and `configs` by model name; every config needs a profile.
  static absl::StatusOr<std::unique_ptr<EmulatedModelRunner>> Create(
      const std::map<std::string, ModelProfile>& profiles,
      std::map<std::string, ModelConfig> configs, Options options);

  absl::StatusOr<std::vector<TensorView>> Run(
      const std::string& model, const std::vector<TensorView>& inputs,
      uint8_t* out, size_t out_capacity, absl::Duration* exec_time) override;
  void SetInterferenceFactor(double factor) override { factor_ = factor; }
  void Drop(const std::string& model) override {
    configs_.erase(model);
    latency_.erase(model);
  }

  // The latency a batch would take now, without noise.
  absl::Duration ExpectedLatency(const std::string& model, int batch) const;

 private:
  EmulatedModelRunner(std::map<std::string, LatencyModel> latency,
                      std::map<std::string, ModelConfig> configs,
                      Options options);

  std::map<std::string, LatencyModel> latency_;
  std::map<std::string, ModelConfig> configs_;
  Options options_;
  double factor_ = 1;
  std::mt19937_64 rng_;
};

}  // namespace tessera
