#pragma once

#include <algorithm>
#include <vector>

namespace tessera {

// Nearest-rank percentile (p in 0..1) of `values`; 0 when empty.
inline double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1,
                         static_cast<size_t>(p * values.size()))];
}

}  // namespace tessera
