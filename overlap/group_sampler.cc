#include "overlap/group_sampler.h"

#include <algorithm>

namespace tessera {
namespace {

int Uniform(int lo, int hi, std::mt19937_64& rng) {  // inclusive
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

}  // namespace

OperatorGroup SampleGroup(const ServiceCatalog& catalog,
                          const std::vector<int>& set, int size,
                          const GroupSamplerOptions& options,
                          std::mt19937_64& rng) {
  std::vector<int> services = set;
  std::shuffle(services.begin(), services.end(), rng);
  services.resize(size);
  std::vector<int> order(size);
  for (int i = 0; i < size; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  const int completing = Uniform(1, size, rng);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> completes(size, false), fresh(size, false);
  for (int i = 0; i < completing; ++i) completes[order[i]] = true;
  std::shuffle(order.begin(), order.end(), rng);
  const int arriving = Uniform(1, size, rng);
  for (int i = 0; i < arriving; ++i) fresh[order[i]] = true;

  const int batch = options.batch_sizes[Uniform(
      0, static_cast<int>(options.batch_sizes.size()) - 1, rng)];
  OperatorGroup group;
  for (int i = 0; i < size; ++i) {
    const OverlapService& s = catalog.service(services[i]);
    GroupMember m;
    m.service = services[i];
    m.start_op = fresh[i] ? 0 : Uniform(0, s.operators - 1, rng);
    m.end_op =
        completes[i] ? s.operators : Uniform(m.start_op + 1, s.operators, rng);
    m.batch = batch;
    if (s.sequence_input) {
      m.seqlen = options.sequence_lengths[Uniform(
          0, static_cast<int>(options.sequence_lengths.size()) - 1, rng)];
    }
    group.push_back(m);
  }
  return group;
}

double TrimmedMedianMs(std::vector<double> runs) {
  std::sort(runs.begin(), runs.end());
  if (runs.size() > 2)
    runs = std::vector<double>(runs.begin() + 1, runs.end() - 1);
  const size_t n = runs.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? runs[n / 2] : 0.5 * (runs[n / 2 - 1] + runs[n / 2]);
}

std::vector<std::vector<MlpSample>> ProfileGroups(
    const ServiceCatalog& catalog, const std::vector<int>& set, int max_size,
    int groups, int runs, const GroupSamplerOptions& options,
    const std::function<double(const OperatorGroup&)>& run_ms,
    std::mt19937_64& rng) {
  std::vector<std::vector<MlpSample>> by_size(max_size + 1);
  for (int size = 1; size <= max_size; ++size) {
    for (int g = 0; g < groups; ++g) {
      const OperatorGroup group = SampleGroup(catalog, set, size, options, rng);
      std::vector<double> measured(runs);
      for (double& ms : measured) ms = run_ms(group);
      by_size[size].push_back(
          MlpSample{catalog.Features(group), TrimmedMedianMs(measured)});
    }
  }
  return by_size;
}

}  // namespace tessera
