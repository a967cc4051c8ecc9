#include "frontend/frontend_metrics.h"

namespace tessera {

FrontendMetrics::FrontendMetrics() {
  requests_ = registry_.AddCounter(
      "tessera_frontend_requests_total",
      "ModelInfer calls answered, by model and gRPC status code.",
      {"model", "code"});
  latency_ = registry_.AddHistogram(
      "tessera_frontend_request_latency_seconds",
      "Latency of successful ModelInfer calls from arrival to answer.",
      {"model"}, MetricsRegistry::LatencyBuckets());
  slo_violations_ = registry_.AddCounter(
      "tessera_frontend_slo_violations_total",
      "Calls answered after their deadline or rejected because they could "
      "not meet it.",
      {"model"});
  batch_size_ = registry_.AddHistogram(
      "tessera_frontend_batch_size", "Items per batch sent to a backend.",
      {"model"}, {1, 2, 4, 8, 16, 32, 64, 128});
  plan_epoch_ = registry_.AddGauge("tessera_frontend_plan_epoch",
                                   "Epoch of the plan in force.", {});
  gpulet_share_ =
      registry_.AddGauge("tessera_frontend_gpulet_share_percent",
                         "Share of each gpulet of the plan in force.",
                         {"backend", "device", "gpulet"});
  queue_depth_ = registry_.AddGauge(
      "tessera_frontend_queue_depth",
      "Calls waiting in each gpulet's dispatcher.", {"gpulet"});
  observed_rate_ = registry_.AddGauge(
      "tessera_frontend_observed_rate_rps",
      "Arrival rate per model over the request monitor's window.", {"model"});
  backend_up_ = registry_.AddGauge(
      "tessera_frontend_backend_up",
      "1 while a backend answers heartbeats, 0 after it missed them.",
      {"backend"});
  plans_ = registry_.AddGauge("tessera_frontend_plans_installed",
                              "Plans installed since start.", {});
  gpulets_started_ = registry_.AddGauge(
      "tessera_frontend_gpulets_started",
      "New gpulets (proxy swaps) across plan changes since start.", {});
  standby_switches_ = registry_.AddGauge(
      "tessera_frontend_standby_switches",
      "Gpulets switched to their standby (shadow) proxy since start.", {});
  held_calls_ = registry_.AddGauge(
      "tessera_frontend_held_calls",
      "ModelInfer calls admitted and not yet answered (--max_inflight_calls).",
      {});
  held_bytes_ = registry_.AddGauge(
      "tessera_frontend_held_bytes",
      "Request bytes (plus a fixed overhead per call) the held calls count "
      "against --max_inflight_mb.",
      {});
  admission_refused_ = registry_.AddGauge(
      "tessera_frontend_admission_refused",
      "Calls refused with RESOURCE_EXHAUSTED by the admission limits since "
      "start.",
      {});
  handed_over_ = registry_.AddGauge(
      "tessera_frontend_calls_handed_over",
      "Queued calls moved from retired to new gpulets since start.", {});
}

void FrontendMetrics::RecordRequest(const std::string& model,
                                    absl::StatusCode code,
                                    absl::Duration latency,
                                    bool missed_deadline) {
  requests_->Increment({model, absl::StatusCodeToString(code)});
  if (code == absl::StatusCode::kOk) {
    latency_->Observe({model}, absl::ToDoubleSeconds(latency));
  }
  if (missed_deadline) slo_violations_->Increment({model});
}

void FrontendMetrics::RecordBatch(const std::string& model, int items) {
  batch_size_->Observe({model}, items);
}

}  // namespace tessera
