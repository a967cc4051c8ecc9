#pragma once

// One device's queries under operator-group scheduling, and the rounds the
// controller makes of them: Abacus keeps a queue per service with one
// active (in-flight) query each; the sequential baselines keep one waiting
// list. Pure (the caller passes the time, measures the decision and runs
// the groups): the backend's device runtime and the simulator both drive
// it, so the two schedule identically.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "overlap/abacus_controller.h"
#include "overlap/group_predictor.h"
#include "overlap/overlap_query.h"
#include "overlap/sequential_controller.h"
#include "overlap/service_catalog.h"

namespace tessera {

enum class OverlapScheduler { kAbacus, kFcfs, kSjf, kEdf };

const char* OverlapSchedulerName(OverlapScheduler s);

struct OverlapQueuesOptions {
  OverlapScheduler scheduler = OverlapScheduler::kAbacus;
  AbacusOptions abacus;
  // The paper's pipelining (Abacus only): the next group is searched as
  // soon as one is launched, against the budget left after it (Eq. 3);
  // false decides when the device is free, with what arrived meanwhile.
  bool pipeline = true;
};

class OverlapQueues {
 public:
  // `catalog` and `predictor` must outlive the queues.
  OverlapQueues(const ServiceCatalog& catalog,
                const GroupLatencyPredictor& predictor,
                OverlapQueuesOptions options);

  // A new query (id unique among those held; next_op 0).
  void Enqueue(const OverlapQuery& query);

  // The device is free: the group to launch now (the pipelined decision if
  // one is pending and not empty, else a fresh one). Queries in `dropped`
  // have left the queues; the caller answers them. An empty group: nothing
  // to run until the next Enqueue.
  GroupDecision NextGroup(double now_ms);

  // The caller launched `decision` at `now_ms`: its members advance, those
  // that reach their last operator are held until Finished(). With
  // pipelining, the next group is decided now; returns the queries that
  // decision dropped (they have left the queues).
  std::vector<uint64_t> Launched(const GroupDecision& decision, double now_ms);

  // The running group ended: the queries it completed.
  std::vector<uint64_t> Finished();

  // Removes one query wherever it is (its group failed). Forgets the
  // pipelined decision, which may hold it.
  void Forget(uint64_t id);

  // Removes every query that has not finished (shutdown).
  std::vector<uint64_t> TakeAll();

  // Whether NextGroup() will return a group decided at the last launch
  // (no decision to make, nor to time).
  bool has_pending_group() const {
    return pending_.has_value() && !pending_->group.empty();
  }

  // Queries held (queued, active or in the running group).
  size_t size() const { return queries_.size(); }
  const OverlapQuery* Find(uint64_t id) const;

 private:
  bool abacus() const {
    return options_.scheduler == OverlapScheduler::kAbacus;
  }
  GroupDecision Decide(double now_ms, double running_ms);
  // The query leaves the controller's view (finishing or dropped).
  void Remove(uint64_t id);

  const ServiceCatalog& catalog_;
  OverlapQueuesOptions options_;
  AbacusController abacus_;
  SequentialController sequential_;
  std::map<uint64_t, OverlapQuery> queries_;
  std::vector<std::optional<uint64_t>> active_;  // per service (Abacus)
  std::vector<std::deque<uint64_t>> queues_;     // per service (Abacus)
  std::vector<uint64_t> waiting_;                // all queued (baselines)
  std::vector<uint64_t> finishing_;              // complete when the group ends
  std::optional<GroupDecision> pending_;
};

}  // namespace tessera
