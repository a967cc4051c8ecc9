#include "proxy/whole_query_runner.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tessera {

absl::StatusOr<std::vector<TensorView>> WholeQueryRunner::Run(
    const std::string& model, const std::vector<TensorView>& inputs,
    uint8_t* out, size_t out_capacity, absl::Duration* exec_time) {
  const int ops = groups_->OperatorCount(model);
  if (ops == 0) {
    return absl::NotFoundError(
        absl::StrCat("model '", model, "' is not loaded on this proxy"));
  }
  GroupMemberRun whole;
  // High ids: never those of the backend's group queries.
  whole.query_id = (uint64_t{1} << 63) | next_query_id_++;
  whole.model = model;
  whole.end_op = ops;
  whole.inputs = inputs;
  whole.out = out;
  whole.out_capacity = out_capacity;
  ASSIGN_OR_RETURN(auto outputs, groups_->RunGroup({whole}, exec_time));
  return std::move(outputs[0]);
}

}  // namespace tessera
