#include "backend/backend_metrics.h"

#include "absl/status/status.h"

namespace tessera {

BackendMetrics::BackendMetrics() {
  batches_ = registry_.AddCounter(
      "tessera_backend_batches_total",
      "Batches answered, by gpulet, model and status code.",
      {"gpulet", "model", "code"});
  exec_ = registry_.AddHistogram("tessera_backend_batch_exec_seconds",
                                 "Execution time of a batch in its proxy.",
                                 {"model"}, MetricsRegistry::LatencyBuckets());
  busy_ = registry_.AddCounter(
      "tessera_backend_gpulet_busy_seconds_total",
      "Time each gpulet's proxy spent executing (rate() = busy fraction).",
      {"gpulet"});
  groups_ = registry_.AddCounter(
      "tessera_backend_groups_total",
      "Operator groups run (Abacus and its baselines), by gpulet and the "
      "number of queries in the group.",
      {"gpulet", "size"});
  decision_ = registry_.AddHistogram(
      "tessera_backend_group_decision_seconds",
      "Time the operator-group controller took to decide a round.", {"gpulet"},
      {2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 3e-4, 5e-4, 1e-3, 1e-2});
  share_ = registry_.AddGauge(
      "tessera_backend_gpulet_share_percent",
      "Share of each live gpulet (retiring=1 while it only drains).",
      {"gpulet", "device", "retiring"});
  epoch_ = registry_.AddGauge("tessera_backend_plan_epoch",
                              "Epoch of the last plan applied.", {});
  swaps_ = registry_.AddCounter(
      "tessera_backend_swaps_total",
      "Proxies started by plan changes since start, by kind.", {"kind"});
  proxy_exits_ = registry_.AddCounter(
      "tessera_backend_proxy_exits_total",
      "Proxies of the plan in force that exited on their own, by gpulet and "
      "what the supervisor did (restarted, or given_up after a crash loop).",
      {"gpulet", "outcome"});
}

void BackendMetrics::RecordProxyExit(const std::string& gpulet,
                                     const std::string& outcome) {
  proxy_exits_->Increment({gpulet, outcome});
}

void BackendMetrics::RecordBatch(const std::string& gpulet,
                                 const std::string& model,
                                 const BatchResponse& response) {
  batches_->Increment({gpulet, model,
                       absl::StatusCodeToString(static_cast<absl::StatusCode>(
                           response.status().code()))});
  if (response.status().code() == 0) {
    const double exec = response.exec_time_us() / 1e6;
    exec_->Observe({model}, exec);
    busy_->Increment({gpulet}, exec);
  }
}

void BackendMetrics::RecordGroup(const std::string& gpulet, int size,
                                 double decision_seconds) {
  groups_->Increment({gpulet, std::to_string(size)});
  decision_->Observe({gpulet}, decision_seconds);
}

void BackendMetrics::SetPlanState(const GpuletTable& table, int64_t epoch,
                                  int64_t swaps,
                                  int64_t stop_then_start_swaps) {
  share_->Clear();
  for (const auto& [id, g] : table.Routable()) {
    share_->Set(
        {id, g.spec.device_id, g.state == GpuletState::kRetiring ? "1" : "0"},
        g.spec.plan.share_percent());
  }
  epoch_->Set({}, static_cast<double>(epoch));
  swaps_->SetTotal({"shadow"},
                   static_cast<double>(swaps - stop_then_start_swaps));
  swaps_->SetTotal({"stop_then_start"},
                   static_cast<double>(stop_then_start_swaps));
}

}  // namespace tessera
