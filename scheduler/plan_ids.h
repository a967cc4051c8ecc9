#pragma once

#include "plan.pb.h"

namespace tessera {

// Gives every gpulet of `next` a stable id: a gpulet with the same backend,
// device, share and model set as one of `current` keeps that gpulet's id
// (its proxy keeps serving: batch sizes and duty cycles may change without
// a new process); every other gpulet is new: it keeps the id the policy
// gave it if `current` does not use that id (static plans keep their
// names), else gets "<backend>/<device>/e<epoch of next>.<n>". A new
// gpulet never reuses an id of `current`, so the backend starts a shadow
// proxy for it while the old one drains. Returns how many are new.
int AssignGpuletIds(const Plan& current, Plan* next);

}  // namespace tessera
