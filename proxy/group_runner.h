#pragma once

// Runs operator groups (Abacus) on a proxy's whole device: the ranges of
// several queries at once, each query's intermediate kept in the proxy from
// its first range to its last. Torch-free interface; implementations:
// EmulatedGroupRunner (an emulated A100 driven by the authors' measured
// group latencies). Not thread-safe: a proxy runs one group at a time.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/tensor_layout.h"

namespace tessera {

struct GroupMemberRun {
  uint64_t query_id = 0;
  std::string model;
  int start_op = 0;
  int end_op = 0;
  // First range (start_op 0) only: the query's inputs, validated against
  // the model's config by the caller.
  std::vector<TensorView> inputs;
  // Last range only: where the outputs go.
  uint8_t* out = nullptr;
  size_t out_capacity = 0;
};

class GroupRunner {
 public:
  virtual ~GroupRunner() = default;
  // Runs the members' ranges together; the group ends when its last range
  // ends (`exec_time`). Returns the outputs of each member, in order: empty
  // for a member that has operators left. On failure nothing ran and every
  // member's query is forgotten.
  virtual absl::StatusOr<std::vector<std::vector<TensorView>>> RunGroup(
      const std::vector<GroupMemberRun>& members,
      absl::Duration* exec_time) = 0;
  // The model's operator count (0: not run by range here).
  virtual int OperatorCount(const std::string& model) const = 0;
};

}  // namespace tessera
