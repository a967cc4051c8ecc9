#include "overlap/overlap_queues.h"

#include <algorithm>

namespace tessera {

const char* OverlapSchedulerName(OverlapScheduler s) {
  switch (s) {
    case OverlapScheduler::kAbacus:
      return "abacus";
    case OverlapScheduler::kFcfs:
      return "fcfs";
    case OverlapScheduler::kSjf:
      return "sjf";
    case OverlapScheduler::kEdf:
      return "edf";
  }
  return "?";
}

namespace {

SequentialOrder OrderOf(OverlapScheduler s) {
  switch (s) {
    case OverlapScheduler::kSjf:
      return SequentialOrder::kSjf;
    case OverlapScheduler::kEdf:
      return SequentialOrder::kEdf;
    default:
      return SequentialOrder::kFcfs;
  }
}

}  // namespace

OverlapQueues::OverlapQueues(const ServiceCatalog& catalog,
                             const GroupLatencyPredictor& predictor,
                             OverlapQueuesOptions options)
    : catalog_(catalog),
      options_(options),
      abacus_(catalog, predictor, options.abacus),
      sequential_(catalog, predictor, OrderOf(options.scheduler)),
      active_(catalog.size()),
      queues_(catalog.size()) {}

void OverlapQueues::Enqueue(const OverlapQuery& query) {
  queries_[query.id] = query;
  if (abacus()) {
    queues_[query.service].push_back(query.id);
  } else {
    waiting_.push_back(query.id);
  }
}

const OverlapQuery* OverlapQueues::Find(uint64_t id) const {
  auto it = queries_.find(id);
  return it == queries_.end() ? nullptr : &it->second;
}

GroupDecision OverlapQueues::NextGroup(double now_ms) {
  if (pending_ && !pending_->group.empty()) {
    GroupDecision d = std::move(*pending_);
    pending_.reset();
    d.dropped.clear();  // reported by Launched()
    return d;
  }
  pending_.reset();
  return Decide(now_ms, 0);
}

GroupDecision OverlapQueues::Decide(double now_ms, double running_ms) {
  std::vector<OverlapQuery> candidates;
  if (abacus()) {
    for (int s = 0; s < catalog_.size(); ++s) {
      if (!active_[s] && !queues_[s].empty()) {
        active_[s] = queues_[s].front();
        queues_[s].pop_front();
      }
      if (active_[s]) candidates.push_back(queries_.at(*active_[s]));
    }
  } else {
    for (uint64_t id : waiting_) candidates.push_back(queries_.at(id));
  }
  GroupDecision d = abacus() ? abacus_.Decide(candidates, now_ms, running_ms)
                             : sequential_.Decide(candidates, now_ms);
  for (uint64_t id : d.dropped) {
    Remove(id);
    queries_.erase(id);
  }
  return d;
}

void OverlapQueues::Remove(uint64_t id) {
  if (abacus()) {
    std::optional<uint64_t>& slot = active_[queries_.at(id).service];
    if (slot == id) slot.reset();
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
  }
}

std::vector<uint64_t> OverlapQueues::Launched(const GroupDecision& decision,
                                              double now_ms) {
  finishing_.clear();
  for (size_t k = 0; k < decision.group.size(); ++k) {
    const uint64_t id = decision.member_ids[k];
    OverlapQuery& q = queries_.at(id);
    q.next_op = decision.group[k].end_op;
    if (q.next_op == catalog_.service(q.service).operators) {
      finishing_.push_back(id);
      Remove(id);
    }
  }
  if (!abacus() || !options_.pipeline) return {};
  pending_ = Decide(now_ms, decision.predicted_ms);
  return pending_->dropped;
}

std::vector<uint64_t> OverlapQueues::Finished() {
  std::vector<uint64_t> done = std::move(finishing_);
  finishing_.clear();
  for (uint64_t id : done) queries_.erase(id);
  return done;
}

void OverlapQueues::Forget(uint64_t id) {
  pending_.reset();
  finishing_.erase(std::remove(finishing_.begin(), finishing_.end(), id),
                   finishing_.end());
  auto it = queries_.find(id);
  if (it == queries_.end()) return;
  if (abacus()) {
    std::deque<uint64_t>& queue = queues_[it->second.service];
    queue.erase(std::remove(queue.begin(), queue.end(), id), queue.end());
    std::optional<uint64_t>& slot = active_[it->second.service];
    if (slot == id) slot.reset();
  } else {
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id),
                   waiting_.end());
  }
  queries_.erase(it);
}

std::vector<uint64_t> OverlapQueues::TakeAll() {
  std::vector<uint64_t> ids;
  for (const auto& [id, q] : queries_) ids.push_back(id);
  queries_.clear();
  for (auto& a : active_) a.reset();
  for (auto& q : queues_) q.clear();
  waiting_.clear();
  finishing_.clear();
  pending_.reset();
  return ids;
}

}  // namespace tessera
