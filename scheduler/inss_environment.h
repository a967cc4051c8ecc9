#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/inss_batching.h"
#include "scheduler/inss_cluster.h"
#include "scheduler/inss_provisioning.h"
#include "scheduler/inss_workload_sampler.h"

namespace tessera {

// The MDP InSS's actor is trained on (Sec. 5.2), driven by InSS's own
// latency model, as the paper allows ("v can be simulated with the latency
// model") and its code does. The paper leaves the environment open
// (digest pitfall 11); this one follows the authors' code where it says
// something:
//  * one step is one second; an episode is `steps` steps (200);
//  * the episode's workload: with a sampler, a device count and a model
//    multiset drawn by InssWorkloadSampler (one actor for a range of
//    clusters and model sets); without, the fixed cluster's slots, each
//    in the episode with probability `presence_probability` (at least
//    one is);
//  * rates start uniform in [min, max] x the model's single-device
//    capacity at the episode's SLO, times K / n when n > K models share
//    K devices (max 1: up to the cluster's capacity), and move by
//    +-`rate_step_fraction` of that range every `rate_change_steps`
//    steps, bouncing off the bounds; arrivals are evenly spaced;
//  * the episode's SLO is one of `slo_factors` x the model's batch-1
//    whole-device latency (the state carries it, so one actor serves
//    several SLOs); no factors: the models' configured SLOs;
//  * state, per slot (kSlotFeatures): present, rate / H_i, backlog / H_i,
//    SLO / (10 x batch-1 latency), current share / 100, (current device
//    + 1) / max devices, and what the model is: log10(batch-1 latency in
//    ms) / 2, L(8) / 8 L(1), L(1, 50 %) / 2 L(1, 100 %), memory / device
//    memory; per device of the most the actor covers (kDeviceFeatures):
//    exists, memory in use / capacity;
//  * action: per slot a device head (max devices options; the agent
//    masks the devices the cluster lacks) and a share-level head (U
//    options, level = index + 1), repaired by
//    InssProvisioning::FromAction, then batch sizes by BDA;
//  * per slot and step, with capacity c = b / t_inf, backlog G and
//    arrivals A = lambda: served = min(G + A, c), the rest stays queued
//    up to what c can still serve within the SLO, the excess is dropped;
//    when BDA's worst task breaks the SLO, the batch positions whose Eq. 2
//    wait breaks it are late, and with queueing_check so are the share
//    of the others whose wait exceeds the slack left (the tail
//    RoundWaitTailProbability; it understates batch 1's light-load tail,
//    see queue_wait.h); a device whose memory is exceeded serves
//    nothing and every task on it violates;
//  * reward (Eq. 3): sum_i c_i / H_i - omega v_i, v_i the violating
//    fraction of the slot's tasks in the step, omega = 100;
//  * with headroom_weight w > 0 (a Tessera addition, off by default) the
//    reward also has w log2(h), h the multiple of the step's rates BDA
//    can still batch on the step's provisioning
//    (BdaPlacementPolicy::BdaHeadroom, capped at headroom_cap; h < 1/2,
//    when BDA cannot batch the rates at all, counts as 1/2). Eq. 3 sees
//    only the capacity BDA's smallest feasible batches give at the step's
//    rates, so two placements that both serve them score alike however
//    far either could grow; the held-out measure (the SLO-preserved
//    maximum) ranks them by that growth.
// Judges a step's violations in place of the environment's latency model
// (InssEnvironmentOptions::judge): e.g. the discrete-event simulator on
// the step's plan (sim/simulated_inss_judge.h).
class InssStepJudge {
 public:
  virtual ~InssStepJudge() = default;
  // Per slot, the fraction of the step's requests (at `rates_rps`, one
  // second) that violate the SLO on `provisioning` batched as `bda`
  // (slots with rate 0: ignored); `seed` varies the arrivals per step.
  virtual std::vector<double> ViolationFractions(
      const InssCluster& cluster, const InssProvisioning& provisioning,
      const InssBatchResult& bda, const std::vector<double>& rates_rps,
      uint64_t seed) const = 0;
};

struct InssEnvironmentOptions {
  int steps = 200;
  double presence_probability = 0.75;
  double min_rate_fraction = 0.1;
  double max_rate_fraction = 1.0;
  double rate_step_fraction = 0.05;
  int rate_change_steps = 10;
  std::vector<double> slo_factors = {3, 5, 10};
  double penalty = 100;  // omega
  // The headroom term above: its weight (0: Eq. 3 alone) and cap.
  double headroom_weight = 0;
  double headroom_cap = 8;
  // Violations from this judge instead of the latency model above (not
  // owned; null: the latency model). Memory overflows still violate
  // everything and queues do not carry between steps.
  const InssStepJudge* judge = nullptr;
};

class InssEnvironment {
 public:
  struct Step {
    std::vector<float> state;  // s'
    double reward = 0;
    double violation_fraction = 0;  // over all tasks of the step
    double capacity_sum = 0;        // sum c_i / H_i
    double headroom = 0;            // h of the headroom term (0 when it is off)
    bool done = false;
  };

  static constexpr int kSlotFeatures = 10;
  static constexpr int kDeviceFeatures = 2;

  // Episodes over the slots of `cluster` that have a latency model.
  InssEnvironment(InssCluster cluster, InssEnvironmentOptions options,
                  uint64_t seed);
  // Episodes over the workloads `sampler` draws (it must outlive this).
  InssEnvironment(const InssWorkloadSampler* sampler,
                  InssEnvironmentOptions options, uint64_t seed);

  int state_size() const { return StateSize(cluster_); }
  int slots() const { return static_cast<int>(cluster_.slots().size()); }
  const InssCluster& cluster() const { return cluster_; }
  // This step's arrival rates per slot (0: not in the episode).
  const std::vector<double>& rates_rps() const { return rates_; }
  const InssEnvironmentOptions& options() const { return options_; }

  std::vector<float> Reset();
  // The random generator as text, and back (training resumes between
  // episodes); Reseed starts it afresh.
  std::string RngState() const;
  absl::Status SetRngState(const std::string& state);
  void Reseed(uint64_t seed) { rng_.seed(seed); }
  // `action`: I device choices then I level indices (0-based).
  Step Apply(const std::vector<int>& action);

  static int StateSize(int slots, int max_gpus) {
    return kSlotFeatures * slots + kDeviceFeatures * max_gpus;
  }
  static int StateSize(const InssCluster& cluster) {
    return StateSize(static_cast<int>(cluster.slots().size()),
                     cluster.max_gpus());
  }
  // The state of the definition above. `slo_ms` per slot; slots with rate
  // 0 are absent.
  static std::vector<float> EncodeState(const InssCluster& cluster,
                                        const std::vector<double>& rates_rps,
                                        const std::vector<double>& backlog,
                                        const InssProvisioning& current);
  // The largest rate (req/s) slot `i` meets its SLO at alone on a whole
  // device (by bisection on BDA).
  static double SoloCapacityRps(const InssCluster& cluster, int slot);

 private:
  // Requests of slot i that violate in this step under the latency model
  // (`queued`: backlog and arrivals); updates its backlog.
  double ModelViolations(int i, const InssBatchResult& bda, double queued);

  InssCluster cluster_;
  const InssWorkloadSampler* sampler_ = nullptr;
  InssEnvironmentOptions options_;
  std::mt19937_64 rng_;
  int t_ = 0;
  std::vector<double> rates_, lo_, hi_, step_, backlog_;
  std::vector<int> direction_;
  InssProvisioning current_;
};

}  // namespace tessera
