#include "batching/weighted_round_robin.h"

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

}  // namespace tessera
