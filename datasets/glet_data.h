#pragma once

#include <map>
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

// One row of the glet artifact's `UTIL.CSV`: a model at a batch size on the
// whole GPU, measured with Nsight Compute.
struct GletUtil {
  double avg_kernel_ms = 0;
  double sm_percent = 0;
  double l2_percent = 0;
  double dram_percent = 0;
  double achieved_occupancy = 0;
  double theoretical_occupancy = 0;
};

// Reads `UTIL.CSV` (header `bench,batch,avg_duration(ms),SM_util(%),
// l2_util(%),mem_util(%),achieved occupancy,theoretical occupancy`) into
// model -> batch -> counters. INVALID_ARGUMENT naming the line on a bad
// row.
absl::StatusOr<std::map<std::string, std::map<int, GletUtil>>> LoadGletUtil(
    const std::string& path);

}  // namespace tessera
