#pragma once

// Abacus's instance-based sampling: draws only operator groups the
// controller can create, for the profiler to measure.

#include <functional>
#include <random>
#include <vector>

#include "overlap/mlp_trainer.h"
#include "overlap/service_catalog.h"

namespace tessera {

struct GroupSamplerOptions {
  std::vector<int> batch_sizes = {4};
  std::vector<int> sequence_lengths = {8, 16, 32, 64};
};

// A group of `size` distinct services drawn from `set`: a random number of
// them complete in the group, a random number are new (start at operator
// 0); a completing query runs to its end, a new one from 0, any other from
// a random start to a random end after it.
OperatorGroup SampleGroup(const ServiceCatalog& catalog,
                          const std::vector<int>& set, int size,
                          const GroupSamplerOptions& options,
                          std::mt19937_64& rng);

// The label of a profiled group as the artifact computes it: the median of
// `runs` measurements after dropping the largest and the smallest.
double TrimmedMedianMs(std::vector<double> runs);

// Measures `groups` groups of each size 1..max_size on `run_ms` (one run of
// a group on the device), `runs` times each.
std::vector<std::vector<MlpSample>> ProfileGroups(
    const ServiceCatalog& catalog, const std::vector<int>& set, int max_size,
    int groups, int runs, const GroupSamplerOptions& options,
    const std::function<double(const OperatorGroup&)>& run_ms,
    std::mt19937_64& rng);

}  // namespace tessera
