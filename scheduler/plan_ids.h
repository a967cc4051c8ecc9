#pragma once

#include <string>
#include <vector>

#include "plan.pb.h"

namespace tessera {

// Gives every gpulet of `next` a stable id: a gpulet with the same backend,
// device, share, model set and scheduler as one of `current` keeps that
// gpulet's id (its proxy keeps serving: batch sizes and duty cycles may
// change without a new process); then a gpulet that is one of `current`
// less some models (an unload: same backend, device, share and batching
// scheduler) keeps that one's id, as its proxy drops the models in place;
// every other gpulet is new and gets
// "<backend>/<device>/e<epoch of next>.<n>", except in the first plan
// (`current` has epoch 0), where it keeps the policy's id when that is
// unique (static plans keep their names). An id thus never names two
// processes, and the backend starts a shadow proxy for every new gpulet
// while the old one drains. Returns how many are new.
int AssignGpuletIds(const Plan& current, Plan* next);

// Which gpulets of `next` AssignGpuletIds(current, next) counts as new:
// one flag per gpulet, devices in order, then their gpulets.
std::vector<bool> NewGpulets(const Plan& current, const Plan& next);

// Whether some gpulet of `plan` serves `model`, and the rate (req/s) the
// plan assigns it in all.
bool PlanServes(const Plan& plan, const std::string& model);
double PlannedRateRps(const Plan& plan, const std::string& model);

}  // namespace tessera
