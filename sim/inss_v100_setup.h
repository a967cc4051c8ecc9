#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "scheduler/inss_workload_sampler.h"
#include "sim/v100_workload.h"

namespace tessera {

// What an InSS actor is trained for: up to `max_models` instances of
// `models` on 1 to `gpus` devices of `profile_key`, shares in units of
// `unit_percent` (10 %: the profiled grid), the paper's 512/256 hidden
// layers.
InssCheckpointInfo MakeInssInfo(const std::string& profile_key,
                                const std::vector<std::string>& models,
                                int max_models, int gpus,
                                double unit_percent = 10);
// The same on V100s.
InssCheckpointInfo V100InssInfo(const std::vector<std::string>& models,
                                int max_models, int gpus,
                                double unit_percent = 10);

// The workloads of `info` on the V100 data, planned with the options the
// experiments plan with (gpulet's linear interference model, default
// headroom).
absl::StatusOr<InssWorkloadSampler> V100InssSampler(
    const V100Setup& setup, const InssCheckpointInfo& info,
    InssWorkloadSamplerOptions options);

// The held-out evaluation workloads of the shipped V100 actor (kept out
// of its training; docs/scheduling.md lists them), as workload keys.
std::vector<std::string> V100InssHeldOut();

}  // namespace tessera
