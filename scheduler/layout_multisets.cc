#include "scheduler/layout_multisets.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace tessera {
namespace {

constexpr int kKinds = 4;

// `count` GPUs of kind `a`, the rest of kind `b` (a < b): non-decreasing.
std::vector<int> TwoKinds(int gpus, int a, int count, int b) {
  std::vector<int> out(gpus, b);
  std::fill(out.begin(), out.begin() + count, a);
  return out;
}

}  // namespace

const std::vector<std::vector<double>>& LayoutMultisets::GpuLayouts() {
  static const std::vector<std::vector<double>> layouts = {
      {100}, {20, 80}, {40, 60}, {50, 50}};
  return layouts;
}

double LayoutMultisets::Count(int gpus) {
  double c = 1;
  for (int i = 1; i < kKinds; ++i) c = c * (gpus + i) / i;
  return c;
}

std::vector<std::vector<int>> LayoutMultisets::All(int gpus) {
  std::vector<std::vector<int>> out;
  if (gpus <= 0) return out;
  std::vector<int> choice(gpus, 0);
  while (true) {
    out.push_back(choice);
    int g = gpus - 1;
    while (g >= 0 && choice[g] == kKinds - 1) --g;
    if (g < 0) break;
    ++choice[g];
    for (int h = g + 1; h < gpus; ++h) choice[h] = choice[g];
  }
  return out;
}

std::vector<std::vector<int>> LayoutMultisets::Simplest(int gpus, int limit) {
  if (gpus <= 0 || limit <= 0) return {};
  if (Count(gpus) <= limit) return All(gpus);
  std::vector<std::vector<int>> out;
  for (int k = 0; k < kKinds && static_cast<int>(out.size()) < limit; ++k) {
    out.push_back(std::vector<int>(gpus, k));
  }
  // Two kinds: splits at odd multiples of 1 / 2^level of the GPUs.
  std::set<std::vector<int>> seen;
  for (int level = 1; (1 << (level - 1)) < gpus; ++level) {
    const int parts = 1 << level;
    for (int a = 0; a < kKinds; ++a) {
      for (int b = a + 1; b < kKinds; ++b) {
        for (int odd = 1; odd < parts; odd += 2) {
          if (static_cast<int>(out.size()) >= limit) return out;
          const int count = std::clamp(
              static_cast<int>(std::lround(1.0 * gpus * odd / parts)), 1,
              gpus - 1);
          std::vector<int> layout = TwoKinds(gpus, a, count, b);
          if (seen.insert(layout).second) out.push_back(std::move(layout));
        }
      }
    }
  }
  return out;
}

}  // namespace tessera
