#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/inss_workload_sampler.h"
#include "sim/cluster_simulator.h"
#include "sim/v100_workload.h"

namespace tessera {

// Whether InSS's training environment (InssEnvironment, one step of its
// latency model) scores placements as the discrete-event simulator does:
// the condition for training there instead of in the simulator. Each
// sample is a held-out workload (V100InssHeldOut), an SLO factor, a load
// (a fraction of each model's share of the devices' capacity, as the
// environment draws it) and a random action made feasible by the repair;
// the environment's one-step violations and reward (Eq. 3) are compared
// with the simulator's on the same plan (BDA's batches) at the same
// Poisson rates. The simulator's reward keeps the plan's capacity term
// and takes its violations from the simulation.
class InssEnvFidelity {
 public:
  struct Options {
    int samples = 200;
    uint64_t seed = 7;
    std::vector<double> slo_factors = {3, 5, 10};
    double min_load = 0.1, max_load = 1.0;
    SimOptions sim;
  };
  struct Sample {
    std::string workload;
    double slo_factor = 0, load = 0;
    double env_violation = 0, sim_violation = 0;  // fractions of arrivals
    double env_reward = 0, sim_reward = 0;
  };
  struct Result {
    std::vector<Sample> samples;
    double violation_pearson = 0, reward_pearson = 0;
    double violation_spearman = 0, reward_spearman = 0;
    double mean_abs_violation_gap = 0;  // |env - sim|, fraction of arrivals
  };

  // `setup` and `sampler` (the V100 pool) must outlive this object.
  InssEnvFidelity(const V100Setup* setup, const InssWorkloadSampler* sampler,
                  Options options)
      : setup_(setup), sampler_(sampler), options_(std::move(options)) {}

  absl::StatusOr<Result> Run() const;
  static void Print(const Result& result, std::FILE* out);
  static std::string Csv(const Result& result);

 private:
  const V100Setup* setup_;
  const InssWorkloadSampler* sampler_;
  Options options_;
};

}  // namespace tessera
