#pragma once

#include <vector>

namespace tessera {

// Smooth weighted round robin (as in nginx): over any window, choice i
// comes up in proportion to its weight, evenly interleaved. Used to split a
// model's requests over its gpulets in proportion to the planned rates, by
// the frontend's router and by the simulator alike. Not thread-safe.
class WeightedRoundRobin {
 public:
  // Adds a choice; non-positive weights count as 1.
  void Add(double weight);
  // Index of the next choice; requires size() > 0.
  int Next();
  int size() const { return static_cast<int>(weights_.size()); }

 private:
  std::vector<double> weights_;
  std::vector<double> credit_;
  double total_ = 0;
};

// For each choice, the fewest picks from one of its picks to its next,
// over the first `picks` picks of a fresh WeightedRoundRobin with
// `weights` added in order (as the router adds a model's gpulets): every
// gap between two requests that choice receives spans at least that many
// gaps of the model's own arrivals. A choice picked at most once in the
// window gets `picks`. Equal weights whose sums are exact in binary (7.5,
// 200) rotate strictly, n for n choices; others need not: the credits'
// rounding breaks some ties the other way (three weights of 800 / 3 give
// a choice two picks running). Planning reads it
// (SharedRules.round_robin_arrivals); the window stands in for the whole,
// endless sequence.
std::vector<int> MinRoundRobinSpacings(const std::vector<double>& weights,
                                       int picks = 4096);

}  // namespace tessera
