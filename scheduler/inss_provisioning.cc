#include "scheduler/inss_provisioning.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/base/internal/raw_logging.h"

namespace tessera {

InssProvisioning InssProvisioning::FromAction(
    const InssCluster& cluster, const std::vector<int>& gpu_choice,
    const std::vector<int>& level_choice, const std::vector<bool>& active) {
  const int n = static_cast<int>(cluster.slots().size());
  const int k = cluster.gpus();
  const int units = cluster.share_units();
  ABSL_RAW_CHECK(static_cast<int>(gpu_choice.size()) == n, "action size");
  ABSL_RAW_CHECK(static_cast<int>(level_choice.size()) == n, "action size");
  ABSL_RAW_CHECK(static_cast<int>(active.size()) == n, "action size");
  InssProvisioning p;
  p.gpu.assign(n, -1);
  p.share_percent.assign(n, 0);
  std::vector<std::vector<int>> on(k);
  for (int i = 0; i < n; ++i) {
    if (!active[i]) continue;
    p.gpu[i] = std::clamp(gpu_choice[i], 0, k - 1);
    on[p.gpu[i]].push_back(i);
  }
  auto level = [&](int i) { return std::clamp(level_choice[i], 1, units); };
  // At most ceil(n / K) models per device (and never more than its
  // units): surplus models move to the emptiest device.
  int active_count = 0;
  for (bool a : active) active_count += a ? 1 : 0;
  const int cap = std::min(units, (active_count + k - 1) / k);
  for (int g = 0; g < k; ++g) {
    while (static_cast<int>(on[g].size()) > cap) {
      auto weakest =
          std::min_element(on[g].begin(), on[g].end(),
                           [&](int a, int b) { return level(a) < level(b); });
      const int i = *weakest;
      on[g].erase(weakest);
      int target = 0;
      for (int h = 1; h < k; ++h) {
        if (on[h].size() < on[target].size()) target = h;
      }
      p.gpu[i] = target;
      on[target].push_back(i);
    }
  }
  // No device stays idle while another is shared: the most crowded
  // device's lowest-level model moves to an empty one.
  for (int g = 0; g < k; ++g) {
    if (!on[g].empty()) continue;
    int crowded = 0;
    for (int h = 1; h < k; ++h) {
      if (on[h].size() > on[crowded].size()) crowded = h;
    }
    if (on[crowded].size() < 2) break;
    auto weakest =
        std::min_element(on[crowded].begin(), on[crowded].end(),
                         [&](int a, int b) { return level(a) < level(b); });
    p.gpu[*weakest] = g;
    on[g].push_back(*weakest);
    on[crowded].erase(weakest);
  }
  for (int g = 0; g < k; ++g) {
    if (on[g].empty()) continue;
    double sum = 0;
    for (int i : on[g]) sum += level(i);
    // One unit each first, then the rest by largest remainder of the
    // proportional split of the remaining units.
    const int spare = units - static_cast<int>(on[g].size());
    std::vector<int> count(on[g].size(), 1);
    std::vector<std::pair<double, int>> remainders;
    int given = 0;
    for (size_t j = 0; j < on[g].size(); ++j) {
      const double exact = spare * level(on[g][j]) / sum;
      const int whole = static_cast<int>(std::floor(exact));
      count[j] += whole;
      given += whole;
      remainders.push_back({exact - whole, static_cast<int>(j)});
    }
    std::sort(
        remainders.begin(), remainders.end(), [](const auto& a, const auto& b) {
          return a.first != b.first ? a.first > b.first : a.second < b.second;
        });
    for (int r = 0; r < spare - given; ++r) ++count[remainders[r].second];
    for (size_t j = 0; j < on[g].size(); ++j) {
      p.share_percent[on[g][j]] =
          std::min(100.0, count[j] * cluster.share_unit_percent());
    }
  }
  return p;
}

}  // namespace tessera
