#pragma once

// Operator groups inside a proxy, with real LibTorch: each member's range
// of its model's segments (<repo>/<m>/<v>/segments.pt) on a thread of its
// own, pinned to one of the proxy's cores (member i on core i mod n), all
// at once; the group ends when the last range ends. A query's intermediate
// tensors stay in the proxy (on its device) from its first range to its
// last, whose outputs are copied into the output area. Torch stays in the
// .cc. The settings it needs are process-wide (one intra-op thread per
// member, no TorchScript graph re-optimisation: see TorchGroupExecutor), so
// it is meant for a proxy whose gpulet runs only groups.
//
// On `cpu` the ranges overlap on the proxy's cores. On `cuda` (the proxy's
// GPU, cuda:0, under MPS at 100 %) each member's thread launches its range
// on a CUDA stream of its own and waits for that stream, so the ranges'
// kernels overlap on the GPU as separate MPS clients' would (Abacus runs
// one process per service; one proxy with a stream per query gives the
// same overlap, and the intermediate never leaves the device). The stream
// API is LibTorch's device-generic one, so this compiles against a
// CPU-only LibTorch and runs where the proxy's LibTorch has CUDA.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model_config.pb.h"
#include "proxy/group_runner.h"

namespace tessera {

class TorchGroupRunner : public GroupRunner {
 public:
  struct Options {
    // The proxy's cores (empty: whatever the process may use).
    std::vector<int> cores;
    // Run on cuda:0 (FAILED_PRECONDITION where LibTorch has no CUDA or
    // sees no GPU); otherwise on the cores.
    bool cuda = false;
  };
  // `segment_paths`: model → its segments.pt; every model there needs a
  // config with segment_count equal to the file's.
  static absl::StatusOr<std::unique_ptr<TorchGroupRunner>> Create(
      const std::map<std::string, std::string>& segment_paths,
      const std::map<std::string, ModelConfig>& configs, Options options);
  ~TorchGroupRunner() override;

  absl::StatusOr<std::vector<std::vector<TensorView>>> RunGroup(
      const std::vector<GroupMemberRun>& members,
      absl::Duration* exec_time) override;
  int OperatorCount(const std::string& model) const override;

 private:
  struct Impl;
  explicit TorchGroupRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
