#pragma once

#include <cstdint>
#include <vector>

namespace tessera {

// Weighted round robin by earliest due pick: the i-th pick (from 0) of a
// choice of weight w is due at (i + 1/2) W / w picks, W the total weight,
// and the choice whose next pick is due first goes next (ties: the lowest
// index). Over any window each choice comes up in proportion to its
// weight, evenly interleaved. Used to split a model's requests over its
// gpulets in proportion to the planned rates, by the frontend's router and
// by the simulator alike. Not thread-safe.
//
// Spacing. n choices of equal weight rotate strictly, and each of them
// comes up at least n picks after its last whatever the other weights:
// between two picks of one of them (due at T and at T + W / w), every
// other of the n is picked once, the later indices at T and the earlier
// ones at T + W / w. So every gap between two requests such a gpulet
// receives spans at least n of the model's own arrivals (Erlang-n or
// more regular), which the planners may count on
// (SharedRules.round_robin_arrivals). The due times are computed afresh
// from whole pick counts, so equal weights tie exactly; the smooth
// weighted round robin of nginx, used before, let rounding break such
// ties (three weights of 800 / 3 gave a choice two picks running) and
// gives no such bound beside unequal weights.
class WeightedRoundRobin {
 public:
  // Adds a choice; non-positive weights count as 1.
  void Add(double weight);
  // Index of the next choice; requires size() > 0.
  int Next();
  int size() const { return static_cast<int>(weights_.size()); }

 private:
  std::vector<double> weights_;
  std::vector<int64_t> picks_;
  double total_ = 0;
};

// For each choice, the fewest picks from one of its picks to its next,
// over the first `picks` picks of a fresh WeightedRoundRobin with
// `weights` added in order (as the router adds a model's gpulets): every
// gap between two requests that choice receives spans at least that many
// gaps of the model's own arrivals. A choice picked at most once in the
// window gets `picks`. Planning reads it
// (SharedRules.round_robin_arrivals); the window stands in for the whole,
// endless sequence.
std::vector<int> MinRoundRobinSpacings(const std::vector<double>& weights,
                                       int picks = 4096);

}  // namespace tessera
