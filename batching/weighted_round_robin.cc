#include "batching/weighted_round_robin.h"

#include <algorithm>

namespace tessera {

void WeightedRoundRobin::Add(double weight) {
  const double w = weight > 0 ? weight : 1.0;
  weights_.push_back(w);
  credit_.push_back(0);
  total_ += w;
}

int WeightedRoundRobin::Next() {
  int best = 0;
  for (int i = 0; i < size(); ++i) {
    credit_[i] += weights_[i];
    if (credit_[i] > credit_[best]) best = i;
  }
  credit_[best] -= total_;
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
