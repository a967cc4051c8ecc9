#pragma once

// The queries a group runner holds between their ranges, and the checks
// every runner makes of a member: its model runs by range here, its range
// lies inside the model, a first range starts a new query, and any other
// continues where the query's last range ended. `State` is the runner's
// per-query data (the emulated device's row checksums, LibTorch's
// tensors). Header-only; not thread-safe (a proxy runs one group at a
// time).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "proxy/group_runner.h"

namespace tessera {

template <typename State>
class GroupQueries {
 public:
  struct Query {
    std::string model;
    int next_op = 0;
    State state;
  };

  // The member's query: created with `start(m)` for a first range, else
  // the one its range continues. `ops`: the model's operator count here (0:
  // not run by range).
  absl::StatusOr<Query*> Admit(
      const GroupMemberRun& m, int ops,
      const std::function<absl::StatusOr<State>(const GroupMemberRun&)>&
          start) {
    if (ops == 0) {
      return absl::NotFoundError(absl::StrCat(
          "model '", m.model, "' is not run by operator range on this proxy"));
    }
    if (!(m.start_op >= 0 && m.start_op < m.end_op && m.end_op <= ops)) {
      return absl::InvalidArgumentError(
          absl::StrCat("range [", m.start_op, ", ", m.end_op, ") of '", m.model,
                       "' is not inside [0, ", ops, ")"));
    }
    auto q = queries_.find(m.query_id);
    if (m.start_op == 0) {
      if (q != queries_.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("query ", m.query_id, " started twice"));
      }
      absl::StatusOr<State> state = start(m);
      if (!state.ok()) return state.status();
      q = queries_.emplace(m.query_id, Query{m.model, 0, std::move(*state)})
              .first;
    } else if (q == queries_.end() || q->second.model != m.model ||
               q->second.next_op != m.start_op) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query ", m.query_id, ": range [", m.start_op, ", ", m.end_op,
          ") does not continue where its last range ended"));
    }
    return &q->second;
  }

  void Forget(uint64_t query_id) { queries_.erase(query_id); }

 private:
  std::map<uint64_t, Query> queries_;
};

}  // namespace tessera
