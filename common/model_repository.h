#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model_config.pb.h"

namespace tessera {

// A Triton-layout model repository on disk:
//   <root>/<model>/config.pbtxt
//   <root>/<model>/<version>/model.pt
// Models with platform "emulated" (served only by emulated GPUs) need no
// file; their versions are their numeric directories, or 1 when there are
// none. Every config is validated at load; a model without any version
// directory holding model.pt is still listed (its files may be generated later)
// but reports itself as not available. Immutable after Load; thread-safe.
class ModelRepository {
 public:
  struct Entry {
    ModelConfig config;
    // Version directories that contain model.pt, ascending numerically.
    std::vector<int64_t> versions;
  };

  // Loads and validates every model under `root`. Fails on the first
  // invalid config, naming the file and the problem.
  static absl::StatusOr<std::unique_ptr<ModelRepository>> Load(
      const std::string& root);

  // Validates a single config (also used for configs received over RPC).
  static absl::Status Validate(const ModelConfig& config);

  // Multiplies every model's SLO by `factor` (an emulated cluster's time
  // scale). Call before sharing the repository.
  void ScaleSlos(double factor);

  const std::string& root() const { return root_; }
  // nullptr if the model is unknown.
  const Entry* Find(const std::string& name) const;
  std::vector<std::string> ModelNames() const;

  // Resolves `version` ("" = default) to a version number present on disk.
  // NOT_FOUND names the model and the versions there are; a version that
  // is not in canonical decimal is INVALID_ARGUMENT.
  // A version string in canonical decimal ("1", "12"; not "01", " 1" or
  // "+1"); nullopt otherwise. Version directories are named so too.
  static std::optional<int64_t> ParseVersion(absl::string_view text);

  absl::StatusOr<int64_t> ResolveVersion(const std::string& name,
                                         const std::string& version) const;
  // Path of the TorchScript file of a resolved version.
  std::string ModelPath(const std::string& name, int64_t version) const;

 private:
  explicit ModelRepository(std::string root) : root_(std::move(root)) {}

  std::string root_;
  std::map<std::string, Entry> models_;
};

}  // namespace tessera
