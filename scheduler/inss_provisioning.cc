#include "scheduler/inss_provisioning.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/base/internal/raw_logging.h"

namespace tessera {

namespace {

// The slot of `on` with the lowest level (ties: the last one).
int LowestLevel(const std::vector<int>& on, const std::vector<int>& level) {
  int pick = on.front();
  for (int i : on) {
    if (level[i] <= level[pick]) pick = i;
  }
  return pick;
}

void Move(int slot, int from, int to, std::vector<std::vector<int>>* on,
          InssProvisioning* p) {
  auto& v = (*on)[from];
  v.erase(std::find(v.begin(), v.end(), slot));
  (*on)[to].push_back(slot);
  p->gpu[slot] = to;
}

// Units per model of one device whose levels sum past `units`: one each,
// the rest in proportion to the levels by largest remainder.
std::vector<int> ScaleDown(const std::vector<int>& levels, int units) {
  double sum = 0;
  for (int l : levels) sum += l;
  const int spare = units - static_cast<int>(levels.size());
  std::vector<int> count(levels.size(), 1);
  if (spare < 0) return count;
  std::vector<std::pair<double, int>> remainders;
  int given = 0;
  for (size_t j = 0; j < levels.size(); ++j) {
    const double exact = spare * levels[j] / sum;
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
  return count;
}

}  // namespace

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
  std::vector<int> level(n, 0);
  std::vector<std::vector<int>> on(k);
  for (int i = 0; i < n; ++i) {
    if (!active[i]) continue;
    p.gpu[i] = std::clamp(gpu_choice[i], 0, k - 1);
    level[i] = std::clamp(level_choice[i], 1, units);
    on[p.gpu[i]].push_back(i);
  }
  // Memory: the lowest-level model of an overfull device moves to the
  // device with the most free memory that holds it.
  const int64_t capacity = cluster.gpu_memory_bytes();
  if (capacity > 0) {
    auto used = [&](int g) {
      int64_t b = 0;
      for (int i : on[g]) b += cluster.slots()[i].memory_bytes;
      return b;
    };
    for (int g = 0; g < k; ++g) {
      while (on[g].size() > 1 && used(g) > capacity) {
        const int i = LowestLevel(on[g], level);
        const int64_t need = cluster.slots()[i].memory_bytes;
        int target = -1;
        for (int h = 0; h < k; ++h) {
          if (h == g || used(h) + need > capacity) continue;
          if (target < 0 || used(h) < used(target)) target = h;
        }
        if (target < 0) break;
        Move(i, g, target, &on, &p);
      }
    }
  }
  // Units: no device holds more models than it has units.
  for (int g = 0; g < k; ++g) {
    while (static_cast<int>(on[g].size()) > units) {
      int target = 0;
      for (int h = 1; h < k; ++h) {
        if (on[h].size() < on[target].size()) target = h;
      }
      if (target == g || static_cast<int>(on[target].size()) >= units) break;
      Move(LowestLevel(on[g], level), g, target, &on, &p);
    }
  }
  // Share sum: a device whose levels sum past its units is scaled down.
  for (int g = 0; g < k; ++g) {
    std::vector<int> levels;
    int sum = 0;
    for (int i : on[g]) {
      levels.push_back(level[i]);
      sum += level[i];
    }
    if (sum > units) levels = ScaleDown(levels, units);
    for (size_t j = 0; j < on[g].size(); ++j) {
      p.share_percent[on[g][j]] =
          std::min(100.0, levels[j] * cluster.share_unit_percent());
    }
  }
  return p;
}

InssProvisioning InssProvisioning::FromFlatAction(
    const InssCluster& cluster, const std::vector<int>& action,
    const std::vector<double>& rates_rps) {
  const int n = static_cast<int>(cluster.slots().size());
  ABSL_RAW_CHECK(static_cast<int>(action.size()) == 2 * n, "action size");
  ABSL_RAW_CHECK(static_cast<int>(rates_rps.size()) == n, "rates size");
  std::vector<int> gpu(action.begin(), action.begin() + n);
  std::vector<int> level(n);
  std::vector<bool> active(n);
  for (int i = 0; i < n; ++i) {
    level[i] = action[n + i] + 1;
    active[i] = rates_rps[i] > 0;
  }
  return FromAction(cluster, gpu, level, active);
}

}  // namespace tessera
