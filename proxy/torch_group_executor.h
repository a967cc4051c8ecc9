#pragma once

// Runs operator groups of segmentable models with real LibTorch: each
// member's range of segments on its own thread, all at once, the group
// ending when the last range ends (Abacus's executor). On the CPU the
// threads are pinned to this process's cores; on cuda:0 each launches its
// range on a CUDA stream of its own (TorchGroupRunner's way). A member that
// starts past segment 0 first gets its intermediate by running [0, start)
// untimed. Torch stays in the .cc.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "overlap/service_catalog.h"

namespace tessera {

class TorchGroupExecutor {
 public:
  // Loads <repo>/<model>/1/segments.pt for each model (config
  // segment_count > 0) with random inputs at `batch` (batch ≤ the model's
  // max). Intra-op threads per member: `threads_per_member`. Both settings
  // this needs are process-wide: LibTorch's intra-op thread count, and no
  // TorchScript graph re-optimisation (which would re-specialise run_range
  // per range and make a group's time depend on what ran before it). Meant
  // for a measuring process (the group profiler, tests). `cuda`: run on
  // cuda:0 (FAILED_PRECONDITION where LibTorch has no CUDA or sees no GPU).
  static absl::StatusOr<std::unique_ptr<TorchGroupExecutor>> Create(
      const std::string& repository, const std::vector<std::string>& models,
      int batch, int threads_per_member, bool cuda = false);
  ~TorchGroupExecutor();

  // The models as a catalog (ids in the order given).
  const ServiceCatalog& catalog() const;

  // Runs `group` (members of distinct models, batch as created) and returns
  // the wall time (ms) from launching the ranges to the last one ending.
  absl::StatusOr<double> RunMs(const OperatorGroup& group);

  // The model's outputs after running its segments in the pieces cut at
  // `cuts` (ascending, inside (0, segment_count)), flattened to floats:
  // for checking that ranges compose to the whole model.
  absl::StatusOr<std::vector<std::vector<float>>> RunInPieces(
      int service, const std::vector<int>& cuts);
  // The same inputs through the model's model.pt (the whole model as
  // served), flattened the same way.
  absl::StatusOr<std::vector<std::vector<float>>> RunWholeModel(int service);

 private:
  struct Impl;
  explicit TorchGroupExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
