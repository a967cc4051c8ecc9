#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/model_repository.h"
#include "profile.pb.h"

namespace tessera {

// The frontend's model profiles, read and validated once at start-up: for
// every model of the repository, the profile of each device kind found at
// `profile_dir`/<key>/<model>.pbtxt (key: cpu, emulated, cuda). Emulated
// profiles' latencies are multiplied by the cluster's time scale. A
// missing file means no profile; a file that does not parse or describes
// no usable latency curve is an error naming it. Immutable; thread-safe.
class ProfileStore {
 public:
  // No profiles at all (empty `profile_dir`).
  ProfileStore() = default;
  static absl::StatusOr<ProfileStore> Load(const std::string& profile_dir,
                                           const ModelRepository& repository,
                                           double time_scale = 1);

  // The profiles of `model` by profile key (empty if none).
  const std::map<std::string, ModelProfile>& ProfilesOf(
      const std::string& model) const;
  int size() const;

 private:
  std::map<std::string, std::map<std::string, ModelProfile>> by_model_;
};

}  // namespace tessera
