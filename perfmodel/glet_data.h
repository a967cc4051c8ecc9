#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "perfmodel/interference_model.h"

namespace tessera {

// Reads the coefficients of gpulet's linear interference model that the
// glet artifact publishes (`INT_MODEL_CONSTANT.CSV`: a header line, then
// l2_util_m1, l2_util_m2, dram_util_m1, dram_util_m2, constant), e.g. from
// ../shared/data/glet/2080ti/ at run time.
absl::StatusOr<LinearInterference> LoadGletInterferenceConstants(
    const std::string& path);

}  // namespace tessera
