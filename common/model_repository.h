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

  // What an invalid entry (a config that does not parse or validate) does
  // to a load: fail it, naming the file and the problem (offline tools),
  // or skip the entry and keep the reason in invalid() (the serving
  // processes: one bad folder must not stop the other models).
  enum class InvalidEntries { kFail, kSkip };

  // Loads and validates every model under `root`.
  static absl::StatusOr<std::unique_ptr<ModelRepository>> Load(
      const std::string& root, InvalidEntries invalid = InvalidEntries::kFail);
  // The entries a kSkip load left out, by directory name, with why.
  const std::map<std::string, absl::Status>& invalid() const {
    return invalid_;
  }

  // Validates a single config (also used for configs received over RPC).
  static absl::Status Validate(const ModelConfig& config);

  // Multiplies every model's SLO by `factor` (an emulated cluster's time
  // scale). Call before sharing the repository.
  void ScaleSlos(double factor);

  const std::string& root() const { return root_; }
  // nullptr if the model is unknown.
  const Entry* Find(const std::string& name) const;
  std::vector<std::string> ModelNames() const;

  // A version string in canonical decimal ("1", "12"; not "01", " 1" or
  // "+1"); nullopt otherwise. Version directories are named so too.
  static std::optional<int64_t> ParseVersion(absl::string_view text);

  // Resolves `version` ("" = default) to a version number present on disk.
  // NOT_FOUND names the model and the versions there are; a version that
  // is not in canonical decimal is INVALID_ARGUMENT; a model whose entry
  // was skipped as invalid is FAILED_PRECONDITION saying why.
  absl::StatusOr<int64_t> ResolveVersion(const std::string& name,
                                         const std::string& version) const;
  // Path of the TorchScript file of a resolved version.
  std::string ModelPath(const std::string& name, int64_t version) const;

  // The config.pbtxt of model directory `dir`, in Tessera's format or
  // Triton's (TritonConfigImporter), not yet validated. Errors name the
  // file. `notes` (may be null) gets the Triton fields read but unused.
  static absl::StatusOr<ModelConfig> ReadConfig(
      const std::string& dir, std::vector<std::string>* notes = nullptr);

 private:
  explicit ModelRepository(std::string root) : root_(std::move(root)) {}

  // One model directory's entry.
  static absl::StatusOr<Entry> LoadEntry(const std::string& dir);

  std::string root_;
  std::map<std::string, Entry> models_;
  std::map<std::string, absl::Status> invalid_;
};

}  // namespace tessera
