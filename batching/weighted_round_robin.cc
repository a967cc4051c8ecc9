#include "batching/weighted_round_robin.h"

#include <algorithm>

namespace tessera {

void WeightedRoundRobin::Add(double weight) {
  const double w = weight > 0 ? weight : 1.0;
  weights_.push_back(w);
  picks_.push_back(0);
  total_ += w;
}

int WeightedRoundRobin::Next() {
  int best = 0;
  double best_due = 0;
  for (int i = 0; i < size(); ++i) {
    const double due =
        (static_cast<double>(picks_[i]) + 0.5) * (total_ / weights_[i]);
    if (i == 0 || due < best_due) {
      best = i;
      best_due = due;
    }
  }
  ++picks_[best];
  return best;
}

std::vector<int> MinRoundRobinSpacings(const std::vector<double>& weights,
                                       int picks) {
  WeightedRoundRobin wrr;
  for (double w : weights) wrr.Add(w);
  std::vector<int> spacing(weights.size(), picks), last(weights.size(), -1);
  for (int n = 0; n < picks; ++n) {
    const int i = wrr.Next();
    if (last[i] >= 0) spacing[i] = std::min(spacing[i], n - last[i]);
    last[i] = n;
  }
  return spacing;
}

}  // namespace tessera
