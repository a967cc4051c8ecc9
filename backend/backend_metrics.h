#pragma once

#include <string>

#include "backend.pb.h"
#include "backend/gpulet_table.h"
#include "common/metrics.h"

namespace tessera {

// The backend's Prometheus metrics (names tessera_backend_*): batches as
// they are answered, gpulets and plan state set right before each scrape.
// Thread-safe.
class BackendMetrics {
 public:
  BackendMetrics();

  // One batch answered by `gpulet`'s proxy.
  void RecordBatch(const std::string& gpulet, const std::string& model,
                   const BatchResponse& response);
  // One round of an operator-group gpulet: the group's size (queries in
  // it) and the controller's decision time for it.
  void RecordGroup(const std::string& gpulet, int size,
                   double decision_seconds);
  // A crashed proxy of `gpulet` found by the supervisor: `outcome` is
  // "restarted" or "given_up" (a crash loop).
  void RecordProxyExit(const std::string& gpulet, const std::string& outcome);
  // Sets the plan-state gauges from what `table` holds now.
  void SetPlanState(const GpuletTable& table, int64_t epoch, int64_t swaps,
                    int64_t stop_then_start_swaps);
  std::string Render() const { return registry_.Render(); }

 private:
  MetricsRegistry registry_;
  MetricsRegistry::Counter* batches_;
  MetricsRegistry::Histogram* exec_;
  MetricsRegistry::Counter* busy_;
  MetricsRegistry::Counter* groups_;
  MetricsRegistry::Histogram* decision_;
  MetricsRegistry::Gauge* share_;
  MetricsRegistry::Gauge* epoch_;
  MetricsRegistry::Counter* swaps_;
  MetricsRegistry::Counter* proxy_exits_;
};

}  // namespace tessera
