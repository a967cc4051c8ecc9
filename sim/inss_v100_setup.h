#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "scheduler/inss_cluster.h"
#include "sim/v100_workload.h"

namespace tessera {

// What InSS is trained for on the V100 data: `models` (instances of the
// measured models) on `gpus` V100s, shares in units of `unit_percent`
// (10 %: the profiled grid), the paper's 512/256 hidden layers.
InssCheckpointInfo V100InssInfo(const std::vector<std::string>& models,
                                int gpus, double unit_percent = 10);

// The planning view of that setup (every slot at 1 req/s; the training
// environment sets rates and SLOs per episode) with the options the
// experiments plan with (gpulet's linear interference model, default
// headroom). The snapshot is kept in `storage` (the cluster points into
// it).
absl::StatusOr<InssCluster> V100InssCluster(const V100Setup& setup,
                                            const InssCheckpointInfo& info,
                                            ClusterSnapshot* storage);

}  // namespace tessera
