#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/latency_model.h"
#include "profile.pb.h"

namespace tessera {

// One device kind's measured profiles, as the profilers write them
// (profiles/<device_kind>/): <model>.pbtxt per model and, where pairs were
// measured, pairs.csv (model, batch, share, other, other_batch, other_share,
// latency_ms, other_latency_ms; one row per side of a co-location). Read
// by the interference fit (tessera_fit_interference --profile_dir).
class ProfileDir {
 public:
  // Reads every *.pbtxt but interference.pbtxt as a ModelProfile, and
  // pairs.csv when present. INVALID_ARGUMENT for a profile or a pair row
  // that does not parse, or a pair of a model with no profile.
  static absl::StatusOr<std::unique_ptr<ProfileDir>> Load(
      const std::string& dir);

  ProfileDir(const ProfileDir&) = delete;
  ProfileDir& operator=(const ProfileDir&) = delete;

  const std::map<std::string, ModelProfile>& profiles() const {
    return profiles_;
  }
  // One sample per pairs.csv row, pointing into this object's models.
  const std::vector<CoLocationSample>& pairs() const { return pairs_; }

 private:
  ProfileDir() = default;
  absl::Status ReadPairs(const std::string& path);

  std::map<std::string, ModelProfile> profiles_;
  std::map<std::string, LatencyModel> models_;
  std::vector<CoLocationSample> pairs_;
};

}  // namespace tessera
