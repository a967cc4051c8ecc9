#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "frontend/inference_statistics.h"

namespace tessera {

// What Triton's metric families need of a finished call: its version ("" if
// it was refused before its version resolved), its batch items and, when
// served, its time queued and executing.
struct ServedCall {
  std::string version;
  int64_t items = 1;
  absl::Duration queued;
  absl::Duration executed;
};

// The frontend's Prometheus metrics (names tessera_frontend_*). Per-call
// and per-batch events are recorded as they happen; plan and queue state
// is set by the server right before each scrape. Thread-safe.
class FrontendMetrics {
 public:
  FrontendMetrics();

  // One finished ModelInfer call: its status, latency since arrival and
  // whether it missed its deadline (late answer or DEADLINE_EXCEEDED).
  // `served` feeds Triton's nv_inference_* families.
  void RecordRequest(const std::string& model, absl::StatusCode code,
                     absl::Duration latency, bool missed_deadline,
                     const ServedCall& served = ServedCall());
  // One batch sent to a backend.
  void RecordBatch(const std::string& model, int items);
  // One batch answered OK: a model execution (Triton's exec_count and
  // per-batch-size statistics).
  void RecordExecution(const std::string& model, const std::string& version,
                       int64_t batch_size, absl::Duration executed);
  // Triton's per-model statistics (the ModelStatistics RPC).
  const InferenceStatistics& statistics() const { return statistics_; }

  MetricsRegistry& registry() { return registry_; }
  MetricsRegistry::Gauge* plan_epoch() { return plan_epoch_; }
  MetricsRegistry::Gauge* gpulet_share() { return gpulet_share_; }
  MetricsRegistry::Gauge* queue_depth() { return queue_depth_; }
  MetricsRegistry::Gauge* observed_rate() { return observed_rate_; }
  MetricsRegistry::Gauge* backend_up() { return backend_up_; }
  MetricsRegistry::Counter* plans() { return plans_; }
  MetricsRegistry::Counter* gpulets_started() { return gpulets_started_; }
  MetricsRegistry::Counter* handed_over() { return handed_over_; }
  MetricsRegistry::Counter* standby_switches() { return standby_switches_; }
  MetricsRegistry::Gauge* held_calls() { return held_calls_; }
  MetricsRegistry::Gauge* held_bytes() { return held_bytes_; }
  MetricsRegistry::Counter* admission_refused() { return admission_refused_; }

 private:
  MetricsRegistry registry_;
  // The constructor's parts: calls and batches; the plan, backends and
  // admission; Triton's families.
  void AddRequestFamilies();
  void AddPlanFamilies();
  void AddTritonFamilies();

  InferenceStatistics statistics_;
  MetricsRegistry::Counter* requests_;
  MetricsRegistry::Histogram* latency_;
  MetricsRegistry::Counter* slo_violations_;
  MetricsRegistry::Histogram* batch_size_;
  MetricsRegistry::Gauge* plan_epoch_;
  MetricsRegistry::Gauge* gpulet_share_;
  MetricsRegistry::Gauge* queue_depth_;
  MetricsRegistry::Gauge* observed_rate_;
  MetricsRegistry::Gauge* backend_up_;
  MetricsRegistry::Counter* plans_;
  MetricsRegistry::Counter* gpulets_started_;
  MetricsRegistry::Counter* handed_over_;
  MetricsRegistry::Counter* standby_switches_;
  MetricsRegistry::Gauge* held_calls_;
  MetricsRegistry::Gauge* held_bytes_;
  MetricsRegistry::Counter* admission_refused_;
  // Triton's nv_inference_* families (labels model, version).
  MetricsRegistry::Counter* nv_success_;
  MetricsRegistry::Counter* nv_failure_;
  MetricsRegistry::Counter* nv_count_;
  MetricsRegistry::Counter* nv_exec_count_;
  MetricsRegistry::Counter* nv_request_us_;
  MetricsRegistry::Counter* nv_queue_us_;
  MetricsRegistry::Counter* nv_compute_infer_us_;
};

}  // namespace tessera
