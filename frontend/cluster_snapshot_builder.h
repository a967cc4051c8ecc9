#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "backend.pb.h"
#include "common/model_repository.h"
#include "frontend/profile_store.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// The snapshot the frontend hands its policy: the devices the backends
// reported (MakeDeviceSnapshot), every model of the
// repository with its profiles from `profiles`, and `current_plan`. Rates
// are left 0 for the caller to fill.
ClusterSnapshot BuildClusterSnapshot(const std::vector<NodeInfo>& nodes,
                                     const ModelRepository& repository,
                                     const ProfileStore& profiles,
                                     const Plan& current_plan, absl::Time now);

}  // namespace tessera
