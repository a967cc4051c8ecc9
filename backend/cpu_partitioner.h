#pragma once

#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

// Maps gpulet shares of a CPU device onto disjoint core sets. A gpulet with
// share p of a device with C cores gets max(1, round(p * C / 100)) cores,
// taken in order, so the intra-op threads of co-located proxies never
// exceed the cores (oversubscription is catastrophic on CPU: see
// docs/ARCHITECTURE.md). FAILED_PRECONDITION when they do not fit.
class CpuPartitioner {
 public:
  static absl::StatusOr<std::vector<std::vector<int>>> Assign(
      const std::vector<int>& device_cores,
      const std::vector<double>& shares_percent);
};

}  // namespace tessera
