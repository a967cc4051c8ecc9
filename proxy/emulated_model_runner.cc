#include "proxy/emulated_model_runner.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/tensor_layout.h"
#include "proxy/emulated_outputs.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<EmulatedModelRunner>>
EmulatedModelRunner::Create(const std::map<std::string, ModelProfile>& profiles,
                            std::map<std::string, ModelConfig> configs,
                            Options options) {
  if (!(options.share_percent > 0 && options.share_percent <= 100)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "emulated device: share ", options.share_percent, "% not in (0, 100]"));
  }
  if (!(options.time_scale > 0)) {
    return absl::InvalidArgumentError(
        "emulated device: time_scale must be > 0");
  }
  if (options.noise_cv < 0) {
    return absl::InvalidArgumentError("emulated device: noise_cv must be >= 0");
  }
  std::map<std::string, LatencyModel> latency;
  for (const auto& [name, config] : configs) {
    auto it = profiles.find(name);
    if (it == profiles.end()) {
      return absl::NotFoundError(
          absl::StrCat("emulated device: no profile for model '", name, "'"));
    }
    ASSIGN_OR_RETURN(auto model, LatencyModel::FromProfile(it->second));
    latency.emplace(name, std::move(model));
  }
  if (!options.sleep) {
    options.sleep = [](absl::Duration d) { absl::SleepFor(d); };
  }
  return std::unique_ptr<EmulatedModelRunner>(new EmulatedModelRunner(
      std::move(latency), std::move(configs), std::move(options)));
}

EmulatedModelRunner::EmulatedModelRunner(
    std::map<std::string, LatencyModel> latency,
    std::map<std::string, ModelConfig> configs, Options options)
    : latency_(std::move(latency)),
      configs_(std::move(configs)),
      options_(std::move(options)),
      rng_(options_.seed) {}

absl::Duration EmulatedModelRunner::ExpectedLatency(const std::string& model,
                                                    int batch) const {
  const double ms = latency_.at(model).LatencyMs(batch, options_.share_percent);
  return absl::Microseconds(ms * std::max(1.0, factor_) * options_.time_scale *
                            1000);
}

absl::StatusOr<std::vector<TensorView>> EmulatedModelRunner::Run(
    const std::string& model, const std::vector<TensorView>& inputs,
    uint8_t* out, size_t out_capacity, absl::Duration* exec_time) {
  auto cit = configs_.find(model);
  if (cit == configs_.end()) {
    return absl::NotFoundError(
        absl::StrCat("model '", model, "' is not loaded on this proxy"));
  }
  const ModelConfig& config = cit->second;
  if (inputs.empty() || inputs[0].shape.empty()) {
    return absl::InvalidArgumentError("emulated run needs batched inputs");
  }
  const int64_t batch = inputs[0].shape[0];
  if (batch < 1 || batch > config.max_batch_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch ", batch, " outside [1, ", config.max_batch_size(), "]"));
  }
  const absl::Time start = absl::Now();
  absl::Duration latency = ExpectedLatency(model, static_cast<int>(batch));
  if (options_.noise_cv > 0) {
    // Log-normal with mean 1 and the given coefficient of variation.
    const double sigma2 = std::log1p(options_.noise_cv * options_.noise_cv);
    std::normal_distribution<double> normal(-sigma2 / 2, std::sqrt(sigma2));
    latency *= std::exp(normal(rng_));
  }

  ASSIGN_OR_RETURN(auto outputs, WriteEmulatedOutputs(
                                     config, InputRowChecksums(inputs, batch),
                                     out, out_capacity));
  // Completes `latency` after it started, however long filling took.
  const absl::Duration left = start + latency - absl::Now();
  if (left > absl::ZeroDuration()) options_.sleep(left);
  *exec_time = latency;
  return outputs;
}

}  // namespace tessera
