#pragma once

// The baselines Abacus is measured against (the per-GPU policies of
// Clockwork and Nexus): whole queries, one at a time, in FCFS, SJF or EDF
// order, with Nexus's drop of a queued query already past its QoS target.

#include <vector>

#include "overlap/group_predictor.h"
#include "overlap/overlap_query.h"

namespace tessera {

enum class SequentialOrder { kFcfs, kSjf, kEdf };

class SequentialController {
 public:
  // SJF orders by the predictor's latency of the query alone.
  SequentialController(const ServiceCatalog& catalog,
                       const GroupLatencyPredictor& predictor,
                       SequentialOrder order)
      : catalog_(catalog), predictor_(predictor), order_(order) {}

  // `queued`: every waiting query. The decision runs one of them whole (a
  // group of one) after dropping those already past their target.
  GroupDecision Decide(const std::vector<OverlapQuery>& queued,
                       double now_ms) const;

 private:
  const ServiceCatalog& catalog_;
  const GroupLatencyPredictor& predictor_;
  SequentialOrder order_;
};

}  // namespace tessera
