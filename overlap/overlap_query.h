#pragma once

// A query as the operator-group controllers see it.

#include <cstdint>
#include <vector>

#include "overlap/service_catalog.h"

namespace tessera {

struct OverlapQuery {
  uint64_t id = 0;
  int service = 0;
  double arrival_ms = 0;
  double qos_ms = 0;
  int next_op = 0;  // Operators [0, next_op) have run.
  int batch = 0;
  int seqlen = 0;

  // Eq. 2 of the Abacus paper: T_QoS − (T_cur − T_start).
  double HeadroomMs(double now_ms) const {
    return qos_ms - (now_ms - arrival_ms);
  }
  // This query's remaining operators, [next_op, operators), or up to `end`.
  GroupMember Range(const ServiceCatalog& catalog, int end = -1) const {
    return GroupMember{service, next_op,
                       end < 0 ? catalog.service(service).operators : end,
                       batch, seqlen};
  }
};

// What a controller decided for the next round.
struct GroupDecision {
  // Queries given up (the caller answers them DEADLINE_EXCEEDED).
  std::vector<uint64_t> dropped;
  // The group to launch (empty: nothing to run) and the query of each
  // member, in the same order.
  OperatorGroup group;
  std::vector<uint64_t> member_ids;
  double predicted_ms = 0;
  // Candidate groups the predictor evaluated, and in how many calls.
  int predictions = 0;
  int predictor_calls = 0;
};

}  // namespace tessera
