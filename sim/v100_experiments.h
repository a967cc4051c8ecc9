#pragma once

#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "inss.pb.h"
#include "scheduler/inss_actor.h"
#include "scheduler/scheduling_policy.h"
#include "sim/v100_workload.h"
#include "sim/workload_suite.h"

namespace tessera {

// tessera_experiments' scheduling experiments on iGniter's V100
// measurements, each printing its table to stdout: the SLO-preserved max
// throughput per policy and workload (Throughput), the GPUs each policy's
// plan uses (GpusNeeded), the gpulet paper's schedulability sweep (Sweep),
// the sensitivity to the unmeasured L(b>1, 100 %) (Share100) and planning
// time (Planning).
class V100Experiments {
 public:
  struct Options {
    // Comma-separated policy names.
    std::string policies;
    // SLOs as multiples of batch-1 full-GPU latency.
    std::vector<double> slo_factors;
    double base_rate_rps = 100;
    int gpus = 4;
    // Simulated seconds per run, and the fewest requests per model a run
    // must see (MEASURES.md).
    double duration_s = 20;
    double min_requests = 1000;
    // Throughput: also write the table here as CSV (empty: no CSV), and
    // the planner efficiency at each limit.
    std::string csv;
    bool efficiency = false;
    // "ideal" only on workloads of at most this many models.
    int ideal_max_models = 4;
    // Planning: "<models>x<gpus>" sizes, comma-separated.
    std::string planning_sizes;
    // What every policy plans with; the interference model is each
    // setup's model of this name (V100Interference).
    PolicyOptions policy;
    std::string interference = "linear";
    // Planning times inss with an actor of each size's shape (null: inss
    // is left out there).
    std::function<absl::StatusOr<std::shared_ptr<const InssActor>>(
        const InssCheckpointInfo&)>
        untrained_inss_actor;
  };

  explicit V100Experiments(Options options) : options_(std::move(options)) {}

  void Throughput(const V100Setup& setup) const;
  // iGniter's cost view: GPUs each policy's plan uses for a fixed workload
  // set (every model at the base rate, on up to 16 GPUs), and the
  // simulated violations of the plans it calls feasible.
  void GpusNeeded(const V100Setup& setup) const;
  // Schedulability sweep in the style of the gpulet paper's Section 3.2:
  // every combination of per-model rates from {0, r, 2r} (all zero
  // excluded) for the four models; a scenario counts for a policy when
  // the policy plans it and the plan keeps violations <= 1 % in
  // simulation.
  void Sweep(const V100Setup& setup) const;
  // How much the results depend on the rule that fills L(b>1, 100%): the
  // four-model mix on 4 GPUs, and each model alone on one GPU at SLO 10x,
  // with the measurements at `path` read under each rule.
  void Share100(const std::string& path) const;
  // Planning time per policy: V100 models replicated under new names,
  // SLOs drawn from 3-10x batch-1 latency, rates sized so the cluster is
  // about half loaded.
  void Planning(const V100Setup& setup) const;

 private:
  PolicyOptions PolicyOptionsFor(const V100Setup& setup) const;
  // One workload's row of the throughput table, printed (and written to
  // `csv` when it is open): each policy's SLO-preserved max, and its
  // planner efficiency as "efficiency:<policy>".
  std::map<std::string, double> ThroughputRow(
      const V100Setup& setup, const Workload& w, double slo,
      const std::vector<std::string>& names, std::ofstream* csv) const;

  const Options options_;
};

}  // namespace tessera
