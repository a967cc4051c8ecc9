#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "backend.pb.h"
#include "common/model_repository.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// The profile key (and profiles/ subdirectory) of a device kind: "cpu",
// "emulated" or "cuda".
std::string ProfileKey(DeviceKind kind);

// The snapshot the frontend hands its policy: the devices the backends
// reported (each with the profile key of its kind), every model of the
// repository with the profiles found under
// `profile_dir`/<profile key>/<model>.pbtxt (none when profile_dir is
// empty; unreadable files are skipped), and `current_plan`. Emulated
// profiles' latencies are multiplied by `time_scale` (the cluster's k).
// Rates are left 0 for the caller to fill.
ClusterSnapshot BuildClusterSnapshot(const std::vector<NodeInfo>& nodes,
                                     const ModelRepository& repository,
                                     const std::string& profile_dir,
                                     const Plan& current_plan, absl::Time now,
                                     double time_scale = 1);

}  // namespace tessera
