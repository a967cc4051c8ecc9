#include "common/model_repository.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/client_text.h"
#include "common/data_type.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "common/triton_config_importer.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace fs = std::filesystem;

namespace {

absl::Status ValidateTensors(
    const ModelConfig& config,
    const google::protobuf::RepeatedPtrField<TensorConfig>& tensors,
    const char* kind) {
  if (tensors.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", config.name(), "' declares no ", kind, "s"));
  }
  std::set<std::string> names;
  for (const TensorConfig& t : tensors) {
    const std::string where =
        absl::StrCat("model '", config.name(), "' ", kind, " '", t.name(), "'");
    if (t.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model '", config.name(), "' has an unnamed ", kind));
    }
    if (!names.insert(t.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is repeated"));
    }
    if (DataTypeSize(t.data_type()) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has no valid data_type"));
    }
    if (t.dims_size() < 1 || t.dims(0) != -1) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " must have -1 (the batch dimension) as its first dim"));
    }
    for (int i = 1; i < t.dims_size(); ++i) {
      if (t.dims(i) <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " has non-positive dim ", i,
                         "; only the batch dimension ", "may vary"));
      }
    }
    if (t.has_value_range()) {
      if (std::string_view(kind) != "input" || !IsIntegerType(t.data_type())) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": value_range applies to integer inputs only"));
      }
      if (t.value_range().min() > t.value_range().max()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": value_range min ", t.value_range().min(),
                         " is above max ", t.value_range().max()));
      }
    }
  }
  return absl::OkStatus();
}

// Whether `path` resolves (symlinks followed) to a folder directly under
// `canonical_root`.
bool InsideRoot(const fs::path& canonical_root, const fs::path& path) {
  std::error_code ec;
  const fs::path resolved = fs::canonical(path, ec);
  return !ec && !canonical_root.empty() &&
         resolved.parent_path() == canonical_root;
}

}  // namespace

absl::Status ModelRepository::Validate(const ModelConfig& config) {
  if (config.name().empty()) {
    return absl::InvalidArgumentError("model config has no name");
  }
  if (config.platform() != "torchscript" && config.platform() != "emulated") {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", config.name(), "': platform '", config.platform(),
        "' is not supported (torchscript, emulated)"));
  }
  if (config.max_batch_size() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", config.name(), "': max_batch_size must be >= 1"));
  }
  if (config.segment_count() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", config.name(), "': segment_count must be >= 0"));
  }
  if (!(config.slo_ms() > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", config.name(), "': slo_ms must be > 0"));
  }
  if (config.has_max_queue_delay_ms() &&
      !(config.max_queue_delay_ms() >= 0 &&
        std::isfinite(config.max_queue_delay_ms()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", config.name(), "': max_queue_delay_ms must be >= 0"));
  }
  RETURN_IF_ERROR(ValidateTensors(config, config.input(), "input"));
  return ValidateTensors(config, config.output(), "output");
}

absl::StatusOr<ModelConfig> ModelRepository::ReadConfig(
    const std::string& dir_path, std::vector<std::string>* notes) {
  const fs::path dir(dir_path);
  const std::string path = (dir / "config.pbtxt").string();
  std::string text;
  RETURN_IF_ERROR(ReadFileToString(path, &text));
  if (!TritonConfigImporter::IsTritonConfig(text)) {
    ModelConfig config;
    absl::Status parsed = ParseTextProto(text, &config);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": ", parsed.message()));
    }
    return config;
  }
  auto imported = TritonConfigImporter::Import(text, notes);
  if (!imported.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " (Triton's format): ", imported.status().message()));
  }
  // Triton takes the directory's name when the config gives none.
  if (imported->name().empty()) {
    imported->set_name(dir.filename().string());
  }
  return imported;
}

absl::StatusOr<ModelRepository::Entry> ModelRepository::LoadEntry(
    const std::string& dir_path) {
  const fs::path dir(dir_path);
  const fs::path config_path = dir / "config.pbtxt";
  Entry entry;
  const std::string dir_name = dir.filename().string();
  std::vector<std::string> notes;
  ASSIGN_OR_RETURN(entry.config, ReadConfig(dir_path, &notes));
  for (const std::string& note : notes) {
    spdlog::info("model '{}' (Triton config): {}", dir_name, note);
  }
  if (entry.config.platform().empty()) {
    entry.config.set_platform("torchscript");
  }
  if (entry.config.name() != dir_name) {
    return absl::InvalidArgumentError(
        absl::StrCat(config_path.string(), ": name '", entry.config.name(),
                     "' differs from its directory '", dir_name, "'"));
  }
  const absl::Status status = Validate(entry.config);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(config_path.string(), ": ", status.message()));
  }
  const bool emulated = entry.config.platform() == "emulated";
  for (const auto& sub : fs::directory_iterator(dir)) {
    const std::optional<int64_t> version =
        ParseVersion(sub.path().filename().string());
    if (sub.is_directory() && version.has_value() &&
        (emulated || fs::exists(sub.path() / "model.pt"))) {
      entry.versions.push_back(*version);
    }
  }
  // An emulated model has no file: its profile is all there is.
  if (emulated && entry.versions.empty()) entry.versions.push_back(1);
  std::sort(entry.versions.begin(), entry.versions.end());
  return entry;
}

absl::StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::Load(
    const std::string& root, InvalidEntries invalid) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError(
        absl::StrCat("model repository '", root, "' is not a directory"));
  }
  auto repo = std::unique_ptr<ModelRepository>(new ModelRepository(root));
  const fs::path canonical_root = fs::canonical(root, ec);
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    if (!fs::exists(dir.path() / "config.pbtxt")) continue;
    const std::string dir_name = dir.path().filename().string();
    absl::StatusOr<Entry> entry =
        InsideRoot(canonical_root, dir.path())
            ? LoadEntry(dir.path().string())
            : absl::PermissionDeniedError(absl::StrCat(
                  "model folder '", dir_name,
                  "' resolves outside the repository (a symlink?)"));
    if (entry.ok()) {
      repo->models_.emplace(dir_name, *std::move(entry));
    } else if (invalid == InvalidEntries::kFail) {
      return entry.status();
    } else {
      spdlog::error("model repository: skipping '{}': {}", dir_name,
                    std::string(entry.status().message()));
      repo->invalid_.emplace(dir_name, entry.status());
    }
  }
  return repo;
}

void ModelRepository::ScaleSlos(double factor) {
  for (auto& [name, entry] : models_) {
    entry.config.set_slo_ms(entry.config.slo_ms() * factor);
  }
}

const ModelRepository::Entry* ModelRepository::Find(
    const std::string& name) const {
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : &it->second;
}

std::vector<std::string> ModelRepository::ModelNames() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : models_) names.push_back(name);
  return names;
}

std::optional<int64_t> ModelRepository::ParseVersion(absl::string_view text) {
  if (text.empty() || text.size() > 18 || (text.size() > 1 && text[0] == '0')) {
    return std::nullopt;
  }
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = 10 * v + (c - '0');
  }
  return v;
}

absl::StatusOr<int64_t> ModelRepository::ResolveVersion(
    const std::string& name, const std::string& version) const {
  const Entry* entry = Find(name);
  if (auto bad = invalid_.find(name); bad != invalid_.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model '", name, "' has an invalid config: ", bad->second.message()));
  }
  if (entry == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown model '", ClientText(name), "'"));
  }
  if (entry->versions.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "model '", name, "' has no version with a model.pt in ", root_));
  }
  std::string wanted =
      version.empty() ? entry->config.default_version() : version;
  if (wanted.empty()) return entry->versions.back();
  const std::optional<int64_t> v = ParseVersion(wanted);
  if (!v.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", name, "': version '", ClientText(wanted),
        "' is not a version number (digits, no sign, spaces or leading "
        "zeros)"));
  }
  if (std::find(entry->versions.begin(), entry->versions.end(), *v) !=
      entry->versions.end()) {
    return *v;
  }
  return absl::NotFoundError(
      absl::StrCat("model '", name, "' has no version '", ClientText(wanted),
                   "' (versions: ", absl::StrJoin(entry->versions, ", "), ")"));
}

std::string ModelRepository::ModelPath(const std::string& name,
                                       int64_t version) const {
  return (fs::path(root_) / name / std::to_string(version) / "model.pt")
      .string();
}

}  // namespace tessera
