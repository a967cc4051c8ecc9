#pragma once

// Trains Tessera's group-latency predictor from profiled groups: one MLP
// per group size, on a random 80 % of that size's samples, with its error
// on the other 20 % (the paper's split).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "overlap.pb.h"
#include "overlap/mlp_trainer.h"
#include "overlap/service_catalog.h"

namespace tessera {

struct HeldoutError {
  int group_size = 0;
  int train = 0, heldout = 0;
  double mape = 0;
};

// `by_size[k]`: the samples of groups of k queries (index 0 unused; sizes
// without samples are skipped, but every size from 1 to the largest must
// have some). The samples are in random order (the sampler's).
absl::StatusOr<GroupPredictorProto> TrainGroupPredictor(
    const ServiceCatalog& catalog, const std::string& device_kind,
    const std::vector<std::vector<MlpSample>>& by_size,
    const MlpTrainerOptions& options, std::vector<HeldoutError>* errors);

}  // namespace tessera
