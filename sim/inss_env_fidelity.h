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
    // The ranking check: states (workload, SLO, load) and random
    // placements per state.
    int rank_states = 48;
    int rank_placements = 100;
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
    // Whether Eq. 3, judged by the simulator as training judges it, ranks
    // placements of one state as the held-out measure does (how far BDA
    // can scale the rates, BdaPlacementPolicy::BdaHeadroom up to 64x):
    // the mean over states of the Spearman correlation between the two
    // over the state's random placements, and of the headroom of Eq. 3's
    // best placement as a fraction of the best headroom there (states
    // where some placement has room).
    int rank_states = 0;
    double reward_headroom_spearman = 0;
    double argmax_headroom_ratio = 0;
  };

  // `setup` and `sampler` (the V100 pool) must outlive this object.
  InssEnvFidelity(const V100Setup* setup, const InssWorkloadSampler* sampler,
                  Options options)
      : setup_(setup), sampler_(sampler), options_(std::move(options)) {}

  absl::StatusOr<Result> Run() const;

  // The ranking check on one state: `reward` and `headroom` score the
  // same placements. `counted` is false when no placement has headroom,
  // or the two are empty or of different lengths
  // (the state is left out of the means). `argmax_ratio` is the headroom
  // of the first placement with the highest reward over the highest
  // headroom; `spearman` is the rank correlation, ties sharing their
  // mean rank.
  struct StateRank {
    bool counted = false;
    double spearman = 0, argmax_ratio = 0;
  };
  static StateRank RankState(const std::vector<double>& reward,
                             const std::vector<double>& headroom);
  static void Print(const Result& result, std::FILE* out);
  static std::string Csv(const Result& result);

 private:
  // Fills the ranking check of `result`.
  absl::Status RankAgreement(Result* result) const;

  const V100Setup* setup_;
  const InssWorkloadSampler* sampler_;
  Options options_;
};

}  // namespace tessera
