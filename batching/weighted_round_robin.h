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

}  // namespace tessera
