#include "overlap/sequential_controller.h"

#include <limits>

namespace tessera {

GroupDecision SequentialController::Decide(
    const std::vector<OverlapQuery>& queued, double now_ms) const {
  GroupDecision decision;
  std::vector<const OverlapQuery*> live;
  for (const OverlapQuery& q : queued) {
    if (q.HeadroomMs(now_ms) <= 0) {
      decision.dropped.push_back(q.id);
    } else {
      live.push_back(&q);
    }
  }
  if (live.empty()) return decision;
  std::vector<double> key(live.size());
  if (order_ == SequentialOrder::kSjf) {
    std::vector<OperatorGroup> alone;
    for (const OverlapQuery* q : live) alone.push_back({q->Range(catalog_)});
    key = predictor_.PredictMs(alone);
    decision.predictions = static_cast<int>(alone.size());
    decision.predictor_calls = 1;
  } else {
    for (size_t i = 0; i < live.size(); ++i) {
      key[i] = order_ == SequentialOrder::kFcfs
                   ? live[i]->arrival_ms
                   : live[i]->arrival_ms + live[i]->qos_ms;
    }
  }
  size_t best = 0;
  for (size_t i = 1; i < live.size(); ++i) {
    // Ties go to the earlier arrival (the queue order).
    if (key[i] < key[best] ||
        (key[i] == key[best] && live[i]->arrival_ms < live[best]->arrival_ms)) {
      best = i;
    }
  }
  decision.group = {live[best]->Range(catalog_)};
  decision.member_ids = {live[best]->id};
  if (order_ == SequentialOrder::kSjf) decision.predicted_ms = key[best];
  return decision;
}

}  // namespace tessera
