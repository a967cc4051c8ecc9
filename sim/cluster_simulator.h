#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "model_config.pb.h"
#include "plan.pb.h"
#include "sim/ground_truth.h"

namespace tessera {

struct SimOptions {
  absl::Duration duration = absl::Seconds(20);
  // Requests arriving before this are served but not counted.
  absl::Duration warmup = absl::Seconds(2);
  uint64_t seed = 1;
  // Fixed per-batch overhead outside the device (network, dispatch).
  absl::Duration overhead = absl::ZeroDuration();
  // Throughput search only: run light loads long enough that every model
  // sees at least this many requests (0: always `duration`). A 1 %
  // violation bound means little over a few dozen requests; at 1000 one
  // violation is 0.1 % of a model's arrivals (MEASURES.md).
  double min_requests = 0;
};

struct ModelResult {
  std::string model;
  int64_t arrived = 0;
  int64_t completed = 0;
  int64_t late = 0;           // completed after the deadline
  int64_t dropped = 0;        // rejected early or never served
  double throughput_rps = 0;  // completed within SLO per second
  double p50_ms = 0, p99_ms = 0;
  double violation_fraction() const {
    return arrived == 0 ? 0 : static_cast<double>(late + dropped) / arrived;
  }
};

struct SimResult {
  std::vector<ModelResult> models;
  int64_t arrived = 0;
  int64_t violations = 0;
  double goodput_rps = 0;
  int gpus_used = 0;
  double share_sum = 0;  // sum of gpulet shares in percent
  // Gpulets moved to their standby share (GpuletPlan.standby_share_percent)
  // during the run, as the frontend does.
  int standby_switches = 0;
  // Batches executed, those that started beside at least one busy
  // partition of the same GPU, and the sum of the ground truth's slowdown
  // factors over the latter (how much interference the plan really met).
  int64_t batches = 0;
  int64_t overlapped_batches = 0;
  double overlapped_factor_sum = 0;
  double violation_fraction() const {
    return arrived == 0 ? 0 : static_cast<double>(violations) / arrived;
  }
  // The worst model's violation fraction (MEASURES.md: a run holds when
  // every model's is <= 1 %; pooling can hide one model's failure).
  double max_model_violation_fraction() const {
    double worst = 0;
    for (const ModelResult& m : models) {
      worst = std::max(worst, m.violation_fraction());
    }
    return worst;
  }
};

// Discrete-event simulation of a cluster serving a plan: Poisson arrivals
// (or a trace), requests split over a model's gpulets in proportion to the
// plan's rates (the router's WeightedRoundRobin), batches formed by the
// serving path's own Dispatcher on simulated time, execution times from the
// GroundTruth given what the neighbouring gpulet runs at that moment.
// Dropped requests count as violations. Gpulets with a standby share switch
// to it as the frontend's CheckStandbys does (every simulated second, more
// than 1 % of at least 20 answered calls late or dropped). Deterministic
// for a seed.
class ClusterSimulator {
 public:
  // `truth` must outlive the simulator; `configs` give SLOs and max batch.
  ClusterSimulator(const GroundTruth* truth,
                   std::map<std::string, ModelConfig> configs)
      : truth_(truth), configs_(std::move(configs)) {}

  // Poisson arrivals at `rates_rps` per model.
  SimResult Run(const Plan& plan, const std::map<std::string, double>& rates,
                const SimOptions& options) const;
  // Arrivals at the given times (seconds from the start) per model.
  SimResult RunTrace(const Plan& plan,
                     const std::map<std::string, std::vector<double>>& arrivals,
                     const SimOptions& options) const;

 private:
  const GroundTruth* truth_;
  std::map<std::string, ModelConfig> configs_;
};

}  // namespace tessera
