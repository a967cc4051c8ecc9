#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/model_repository.h"
#include "config.pb.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Validates a frontend config and fills the defaults documented in
// config.proto (backends with ids and addresses, positive periods and
// thresholds), once, at start-up.
absl::Status ValidateFrontendConfig(FrontendConfig* config);

// The options the config's policies are built with: the static plan,
// standby shadows, InSS's checkpoint and fallback, the planning rules
// resolved, and the interference model read from `interference_profile`
// (INVALID_ARGUMENT naming the file if it is not the 5-coefficient linear
// form).
absl::StatusOr<PolicyOptions> PolicyOptionsFromConfig(
    const FrontendConfig& config);

// Refuses a static plan (PolicyOptions::static_plan) naming a model the
// repository does not know, valid or not, and, under `policy` "static", one
// that leaves a servable model of the repository unserved.
absl::Status CheckStaticPlan(const std::string& policy,
                             const PolicyOptions& options,
                             const ModelRepository& repository);

}  // namespace tessera
