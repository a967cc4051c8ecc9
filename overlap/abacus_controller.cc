#include "overlap/abacus_controller.h"

#include <algorithm>

namespace tessera {

GroupDecision AbacusController::Decide(const std::vector<OverlapQuery>& active,
                                       double now_ms, double running_ms) const {
  std::vector<OverlapQuery> queries = active;
  std::stable_sort(queries.begin(), queries.end(),
                   [now_ms](const OverlapQuery& a, const OverlapQuery& b) {
                     return a.HeadroomMs(now_ms) < b.HeadroomMs(now_ms);
                   });
  GroupDecision decision;
  while (!queries.empty()) {
    const double headroom = queries[0].HeadroomMs(now_ms);
    if (options_.drop && headroom <= 0) {
      decision.dropped.push_back(queries[0].id);
      queries.erase(queries.begin());
      continue;
    }
    const double budget = headroom - running_ms;
    // Whole-query prefixes: q0; q0 + q1; ...; one batched prediction.
    std::vector<OperatorGroup> prefixes;
    OperatorGroup group;
    for (const OverlapQuery& q : queries) {
      group.push_back(q.Range(catalog_));
      prefixes.push_back(group);
    }
    const std::vector<double> predicted = predictor_.PredictMs(prefixes);
    decision.predictions += static_cast<int>(prefixes.size());
    ++decision.predictor_calls;
    int fits = -1;
    for (int j = 0; j < static_cast<int>(predicted.size()); ++j) {
      if (predicted[j] <= budget) fits = j;
    }
    if (fits < 0) {
      if (options_.drop) {
        decision.dropped.push_back(queries[0].id);
        queries.erase(queries.begin());
        continue;
      }
      fits = 0;  // Run the guaranteed query alone, late.
    }
    decision.group = prefixes[fits];
    decision.predicted_ms = predicted[fits];
    for (int j = 0; j <= fits; ++j)
      decision.member_ids.push_back(queries[j].id);
    if (fits + 1 < static_cast<int>(queries.size())) {
      SearchRange(queries[fits + 1], budget, &decision);
    }
    return decision;
  }
  return decision;
}

void AbacusController::SearchRange(const OverlapQuery& next, double budget,
                                   GroupDecision* decision) const {
  // lo: the largest end known to fit (next_op: add nothing); hi: the
  // smallest end known not to fit (the whole query, from the prefix step).
  int lo = next.next_op;
  int hi = catalog_.service(next.service).operators;
  double lo_ms = decision->predicted_ms;
  const int ways = std::max(1, options_.ways);
  while (hi - lo > 1) {
    if (lo > next.next_op && budget - lo_ms < options_.early_stop_ms) break;
    std::vector<int> cuts;
    for (int i = 1; i <= ways; ++i) {
      const int c =
          lo + static_cast<int>(static_cast<long>(hi - lo) * i / (ways + 1));
      if (c > lo && c < hi && (cuts.empty() || c > cuts.back())) {
        cuts.push_back(c);
      }
    }
    if (cuts.empty()) cuts.push_back(lo + 1);
    std::vector<OperatorGroup> candidates;
    for (int c : cuts) {
      OperatorGroup g = decision->group;
      g.push_back(next.Range(catalog_, c));
      candidates.push_back(std::move(g));
    }
    const std::vector<double> predicted = predictor_.PredictMs(candidates);
    decision->predictions += static_cast<int>(candidates.size());
    ++decision->predictor_calls;
    int new_hi = hi;
    for (size_t i = 0; i < cuts.size(); ++i) {
      if (predicted[i] <= budget) {
        lo = cuts[i];
        lo_ms = predicted[i];
      }
    }
    // Whatever does not fit bounds the search, a prediction that is not a
    // number included: every step then narrows (lo, hi).
    for (size_t i = 0; i < cuts.size(); ++i) {
      if (cuts[i] > lo && !(predicted[i] <= budget)) {
        new_hi = std::min(new_hi, cuts[i]);
      }
    }
    hi = new_hi;
  }
  if (lo > next.next_op) {
    decision->group.push_back(next.Range(catalog_, lo));
    decision->member_ids.push_back(next.id);
    decision->predicted_ms = lo_ms;
  }
}

}  // namespace tessera
