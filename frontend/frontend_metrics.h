#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/metrics.h"

namespace tessera {

// The frontend's Prometheus metrics (names tessera_frontend_*). Per-call
// and per-batch events are recorded as they happen; plan and queue state
// is set by the server right before each scrape. Thread-safe.
class FrontendMetrics {
 public:
  FrontendMetrics();

  // One finished ModelInfer call: its status, latency since arrival and
  // whether it missed its deadline (late answer or DEADLINE_EXCEEDED).
  void RecordRequest(const std::string& model, absl::StatusCode code,
                     absl::Duration latency, bool missed_deadline);
  void RecordBatch(const std::string& model, int items);

  MetricsRegistry& registry() { return registry_; }
  MetricsRegistry::Gauge* plan_epoch() { return plan_epoch_; }
  MetricsRegistry::Gauge* gpulet_share() { return gpulet_share_; }
  MetricsRegistry::Gauge* queue_depth() { return queue_depth_; }
  MetricsRegistry::Gauge* observed_rate() { return observed_rate_; }
  MetricsRegistry::Gauge* backend_up() { return backend_up_; }
  MetricsRegistry::Gauge* plans() { return plans_; }
  MetricsRegistry::Gauge* gpulets_started() { return gpulets_started_; }
  MetricsRegistry::Gauge* handed_over() { return handed_over_; }
  MetricsRegistry::Gauge* standby_switches() { return standby_switches_; }
  MetricsRegistry::Gauge* held_calls() { return held_calls_; }
  MetricsRegistry::Gauge* held_bytes() { return held_bytes_; }
  MetricsRegistry::Gauge* admission_refused() { return admission_refused_; }

 private:
  MetricsRegistry registry_;
  MetricsRegistry::Counter* requests_;
  MetricsRegistry::Histogram* latency_;
  MetricsRegistry::Counter* slo_violations_;
  MetricsRegistry::Histogram* batch_size_;
  MetricsRegistry::Gauge* plan_epoch_;
  MetricsRegistry::Gauge* gpulet_share_;
  MetricsRegistry::Gauge* queue_depth_;
  MetricsRegistry::Gauge* observed_rate_;
  MetricsRegistry::Gauge* backend_up_;
  MetricsRegistry::Gauge* plans_;
  MetricsRegistry::Gauge* gpulets_started_;
  MetricsRegistry::Gauge* handed_over_;
  MetricsRegistry::Gauge* standby_switches_;
  MetricsRegistry::Gauge* held_calls_;
  MetricsRegistry::Gauge* held_bytes_;
  MetricsRegistry::Gauge* admission_refused_;
};

}  // namespace tessera
