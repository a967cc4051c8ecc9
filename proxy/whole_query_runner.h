#pragma once

// Runs whole batches on a device that runs operator groups: a batch is a
// group of one query over all its operators. Lets a proxy whose device is
// an emulated A100 also serve plain batches (the frontend's batching
// policies, the sequential baselines' whole queries) from the same ground
// truth.

#include "proxy/group_runner.h"
#include "proxy/model_runner.h"

namespace tessera {

class WholeQueryRunner : public ModelRunner {
 public:
  // `groups` must outlive the runner.
  explicit WholeQueryRunner(GroupRunner* groups) : groups_(groups) {}

  absl::StatusOr<std::vector<TensorView>> Run(
      const std::string& model, const std::vector<TensorView>& inputs,
      uint8_t* out, size_t out_capacity, absl::Duration* exec_time) override;

 private:
  GroupRunner* groups_;
  uint64_t next_query_id_ = 1;
};

}  // namespace tessera
