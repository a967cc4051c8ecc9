#pragma once

// Operator groups on the `cpu` device inside a proxy, with real LibTorch:
// each member's range of its model's segments (<repo>/<m>/<v>/segments.pt)
// on a thread of its own, pinned to one of the proxy's cores (member i on
// core i mod n), all at once; the group ends when the last range ends. A
// query's intermediate tensors stay in the proxy from its first range to
// its last, whose outputs are copied into the output area. Torch stays in
// the .cc. The settings it needs are process-wide (one intra-op thread per
// member, no TorchScript graph re-optimisation: see TorchGroupExecutor), so
// it is meant for a proxy whose gpulet runs only groups.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model_config.pb.h"
#include "proxy/group_runner.h"

namespace tessera {

class TorchGroupRunner : public GroupRunner {
 public:
  // `segment_paths`: model → its segments.pt; every model there needs a
  // config with segment_count equal to the file's. `cores`: the proxy's
  // (empty: whatever the process may use).
  static absl::StatusOr<std::unique_ptr<TorchGroupRunner>> Create(
      const std::map<std::string, std::string>& segment_paths,
      const std::map<std::string, ModelConfig>& configs,
      std::vector<int> cores);
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
