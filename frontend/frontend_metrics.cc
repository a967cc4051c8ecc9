#include "frontend/frontend_metrics.h"

#include "absl/time/clock.h"

namespace tessera {

FrontendMetrics::FrontendMetrics() {
  AddRequestFamilies();
  AddPlanFamilies();
  AddTritonFamilies();
}

void FrontendMetrics::AddRequestFamilies() {
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
}

void FrontendMetrics::AddPlanFamilies() {
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
  plans_ = registry_.AddCounter("tessera_frontend_plans_installed_total",
                                "Plans installed since start.", {});
  gpulets_started_ = registry_.AddCounter(
      "tessera_frontend_gpulets_started_total",
      "New gpulets (proxy swaps) across plan changes since start.", {});
  standby_switches_ = registry_.AddCounter(
      "tessera_frontend_standby_switches_total",
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
  admission_refused_ = registry_.AddCounter(
      "tessera_frontend_admission_refused_total",
      "Calls refused with RESOURCE_EXHAUSTED by the admission limits or the "
      "event loops' backlog bound since start.",
      {});
  handed_over_ = registry_.AddCounter(
      "tessera_frontend_calls_handed_over_total",
      "Queued calls moved from retired to new gpulets since start.", {});
}

void FrontendMetrics::AddTritonFamilies() {
  // Triton's names, labels and meanings (its metrics documentation), so
  // Triton dashboards and alerts work unchanged.
  const std::vector<std::string> mv = {"model", "version"};
  nv_success_ = registry_.AddCounter("nv_inference_request_success",
                                     "Number of successful inference requests, "
                                     "all batch sizes.",
                                     mv);
  nv_failure_ = registry_.AddCounter(
      "nv_inference_request_failure",
      "Number of failed inference requests, all batch sizes.", mv);
  nv_count_ = registry_.AddCounter(
      "nv_inference_count",
      "Number of inferences performed (a request of batch n counts n).", mv);
  nv_exec_count_ = registry_.AddCounter(
      "nv_inference_exec_count",
      "Number of model executions performed (batches sent to a backend).", mv);
  nv_request_us_ = registry_.AddCounter(
      "nv_inference_request_duration_us",
      "Cumulative inference request duration in microseconds, arrival to "
      "answer, of successful requests.",
      mv);
  nv_queue_us_ = registry_.AddCounter(
      "nv_inference_queue_duration_us",
      "Cumulative inference queuing duration in microseconds (the "
      "frontend's queue and the device's), of successful requests.",
      mv);
  nv_compute_infer_us_ = registry_.AddCounter(
      "nv_inference_compute_infer_duration_us",
      "Cumulative compute inference duration in microseconds (the batch's "
      "execution), of successful requests.",
      mv);
}

void FrontendMetrics::RecordRequest(const std::string& model,
                                    absl::StatusCode code,
                                    absl::Duration latency,
                                    bool missed_deadline,
                                    const ServedCall& served) {
  requests_->Increment({model, absl::StatusCodeToString(code)});
  const LabelValues mv = {model, served.version};
  if (code == absl::StatusCode::kOk) {
    latency_->Observe({model}, absl::ToDoubleSeconds(latency));
    nv_success_->Increment(mv);
    nv_count_->Increment(mv, static_cast<double>(served.items));
    nv_request_us_->Increment(mv, absl::ToDoubleMicroseconds(latency));
    nv_queue_us_->Increment(mv, absl::ToDoubleMicroseconds(served.queued));
    nv_compute_infer_us_->Increment(
        mv, absl::ToDoubleMicroseconds(served.executed));
  } else {
    nv_failure_->Increment(mv);
  }
  if (missed_deadline) slo_violations_->Increment({model});
  statistics_.RecordRequest(
      model, served.version, code == absl::StatusCode::kOk, latency,
      served.queued, served.executed, served.items, absl::Now());
}

void FrontendMetrics::RecordBatch(const std::string& model, int items) {
  batch_size_->Observe({model}, items);
}

void FrontendMetrics::RecordExecution(const std::string& model,
                                      const std::string& version,
                                      int64_t batch_size,
                                      absl::Duration executed) {
  nv_exec_count_->Increment({model, version});
  statistics_.RecordExecution(model, version, batch_size, executed);
}

}  // namespace tessera
