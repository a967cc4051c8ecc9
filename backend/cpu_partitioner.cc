#include "backend/cpu_partitioner.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tessera {

absl::StatusOr<std::vector<std::vector<int>>> CpuPartitioner::Assign(
    const std::vector<int>& device_cores,
    const std::vector<double>& shares_percent) {
  const int total = static_cast<int>(device_cores.size());
  std::vector<std::vector<int>> assigned;
  int next = 0;
  for (double share : shares_percent) {
    const int want =
        std::max(1, static_cast<int>(std::lround(share * total / 100.0)));
    if (next + want > total) {
      return absl::FailedPreconditionError(absl::StrCat(
          "gpulet shares need more than the device's ", total, " core(s)"));
    }
    assigned.emplace_back(device_cores.begin() + next,
                          device_cores.begin() + next + want);
    next += want;
  }
  return assigned;
}

}  // namespace tessera
