#include "frontend/profile_store.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/text_proto.h"
#include "perfmodel/latency_model.h"
#include "scheduler/device_snapshot.h"

namespace tessera {

absl::StatusOr<ProfileStore> ProfileStore::Load(
    const std::string& profile_dir, const ModelRepository& repository,
    double time_scale) {
  ProfileStore store;
  if (profile_dir.empty()) return store;
  for (const std::string& name : repository.ModelNames()) {
    for (DeviceKind kind :
         {DEVICE_KIND_CPU, DEVICE_KIND_EMULATED, DEVICE_KIND_CUDA}) {
      const std::string key = ProfileKey(kind);
      const std::string path =
          absl::StrCat(profile_dir, "/", key, "/", name, ".pbtxt");
      if (!std::filesystem::exists(path)) continue;
      ModelProfile profile;
      absl::Status read = ReadTextProto(path, &profile);
      if (read.ok()) read = LatencyModel::FromProfile(profile).status();
      if (!read.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("profile ", path, ": ", read.message()));
      }
      if (kind == DEVICE_KIND_EMULATED && time_scale != 1) {
        for (LatencyPoint& p : *profile.mutable_latency()) {
          p.set_latency_ms(p.latency_ms() * time_scale);
          p.set_latency_p99_ms(p.latency_p99_ms() * time_scale);
        }
      }
      store.by_model_[name][key] = std::move(profile);
    }
  }
  return store;
}

const std::map<std::string, ModelProfile>& ProfileStore::ProfilesOf(
    const std::string& model) const {
  static const std::map<std::string, ModelProfile> kNone;
  auto it = by_model_.find(model);
  return it == by_model_.end() ? kNone : it->second;
}

int ProfileStore::size() const {
  int n = 0;
  for (const auto& [model, profiles] : by_model_) {
    n += static_cast<int>(profiles.size());
  }
  return n;
}

}  // namespace tessera
