#pragma once

#include <vector>

namespace tessera {

// Fixed partition layouts of a cluster of identical GPUs, as the gpulet
// artifact's full search makes them: each GPU whole, 20/80, 40/60 or
// 50/50, the GPUs taken as a multiset (C(N + 3, 3) layouts for N GPUs).
// A layout is a layout index per GPU (into GpuLayouts()), non-decreasing.
class LayoutMultisets {
 public:
  // The per-GPU layouts (percent).
  static const std::vector<std::vector<double>>& GpuLayouts();

  // Number of multisets of `gpus` GPUs: C(gpus + 3, 3).
  static double Count(int gpus);

  // Every multiset, in lexicographic order of the index sequence.
  static std::vector<std::vector<int>> All(int gpus);

  // At most `limit` multisets, simplest first: all of them when there are
  // no more than `limit`; otherwise the homogeneous ones, then two kinds
  // mixed, coarse to fine (for each pair of kinds, the split at 1/2 of the
  // GPUs, then at 1/4 and 3/4, then eighths, ...), until `limit`.
  static std::vector<std::vector<int>> Simplest(int gpus, int limit);
};

}  // namespace tessera
