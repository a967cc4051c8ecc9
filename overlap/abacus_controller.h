#pragma once

// Abacus's headroom-based query controller (SC'21, Sec. 6): each round the
// query with the least headroom runs to its end, and whole queries, then a
// range of the next one, are added while the predicted group latency fits
// that headroom (multi-way search, one batched prediction per step). A
// query whose headroom is gone, or that cannot finish even alone, is
// dropped. Pure: no clock, no I/O; the device runtime and the simulator
// call it.

#include <vector>

#include "overlap/group_predictor.h"
#include "overlap/overlap_query.h"
#include "overlap/service_catalog.h"

namespace tessera {

struct AbacusOptions {
  // Cut points tried per prediction call in the in-query search (the
  // artifact's scripts: 2; the paper's text: 4).
  int ways = 2;
  // Stop the in-query search once the budget left is below this (ms; the
  // artifact's --thld 5).
  double early_stop_ms = 5;
  // Drop queries predicted to miss (the artifact's --abandon).
  bool drop = true;
};

class AbacusController {
 public:
  AbacusController(const ServiceCatalog& catalog,
                   const GroupLatencyPredictor& predictor,
                   AbacusOptions options)
      : catalog_(catalog), predictor_(predictor), options_(options) {}

  // `active`: the in-flight query of each service (at most one per
  // service, as the artifact). `running_ms`: the predicted time left of the
  // group now on the device, which the new group must wait for (Eq. 3).
  GroupDecision Decide(const std::vector<OverlapQuery>& active, double now_ms,
                       double running_ms) const;

 private:
  // Adds the largest range of `next` that keeps the group within `budget`.
  void SearchRange(const OverlapQuery& next, double budget,
                   GroupDecision* decision) const;

  const ServiceCatalog& catalog_;
  const GroupLatencyPredictor& predictor_;
  AbacusOptions options_;
};

}  // namespace tessera
