#pragma once

// One device under operator-group scheduling, on simulated time: Poisson
// queries of a co-location set, the Abacus controller or a sequential
// baseline deciding each round, and a device that runs each group for the
// time the ground truth draws. The same controllers as the backend's.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "overlap/abacus_controller.h"
#include "overlap/group_predictor.h"
#include "overlap/overlap_queues.h"
#include "overlap/sequential_controller.h"
#include "overlap/service_catalog.h"

namespace tessera {

struct OverlapWorkload {
  std::vector<int> services;  // the co-located set (catalog ids)
  double qos_ms = 0;          // one target for the set, as the artifact
  double load_qps = 0;        // total Poisson rate; services uniform
  int queries = 1000;
  int batch = 4;
  std::vector<int> sequence_lengths = {8, 16, 32, 64};
  uint64_t seed = 1;
};

struct OverlapSimOptions {
  OverlapScheduler scheduler = OverlapScheduler::kAbacus;
  AbacusOptions abacus;
  // The paper's pipelining: the next group is searched while the current
  // one runs (budget minus its predicted time, Eq. 3); false decides when
  // the device is free, with the queries that arrived meanwhile.
  bool pipeline = true;
  bool keep_trace = false;
};

// One round on the device, for trace plots.
struct OverlapRound {
  double start_ms = 0;
  double end_ms = 0;
  double predicted_ms = 0;
  OperatorGroup group;
};

struct OverlapRunResult {
  int queries = 0;
  int served = 0;  // completed (late ones included)
  int in_qos = 0;  // completed within the QoS target
  int dropped = 0;
  double p99_ms = 0;  // over completed queries
  double duration_s = 0;
  double busy_s = 0;
  int rounds = 0;
  std::vector<double> decision_us;  // wall time of each controller call
  std::vector<OverlapRound> trace;

  // MEASURES-style: late and dropped queries are both violations.
  double ViolationRatio() const {
    return queries == 0 ? 0 : 1.0 - static_cast<double>(in_qos) / queries;
  }
  double GoodputQps() const { return duration_s > 0 ? in_qos / duration_s : 0; }
};

// One run: `run_ms` is the device (one run of a group, in ms).
OverlapRunResult SimulateOverlapDevice(
    const OverlapWorkload& workload, const OverlapSimOptions& options,
    const ServiceCatalog& catalog, const GroupLatencyPredictor& predictor,
    const std::function<double(const OperatorGroup&)>& run_ms);

}  // namespace tessera
