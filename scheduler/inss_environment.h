#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "scheduler/inss_batching.h"
#include "scheduler/inss_cluster.h"
#include "scheduler/inss_provisioning.h"

namespace tessera {

// The MDP InSS's actor is trained on (Sec. 5.2), driven by InSS's own
// latency model, as the paper allows ("v can be simulated with the latency
// model") and its code does. The paper leaves the environment open
// (digest pitfall 11); this one follows the authors' code where it says
// something:
//  * one step is one second; an episode is `steps` steps (200);
//  * every slot is in the episode's workload with probability
//    `presence_probability` (at least one is), so one actor serves any
//    subset of its models; rates start uniform in [min, max] x the
//    model's single-device capacity at the episode's SLO (times K / n
//    when n > K models are present) and move by
//    +-`rate_step_fraction` of that range every `rate_change_steps`
//    steps, bouncing off the bounds; arrivals are evenly spaced;
//  * the episode's SLO is one of `slo_factors` x the model's batch-1
//    whole-device latency (the state carries it, so one actor serves
//    several SLOs); no factors: the models' configured SLOs;
//  * state (size 6 I + K) per slot: present, rate / H_i, backlog / H_i,
//    SLO / (10 x batch-1 latency), current share / 100, (current device
//    + 1) / K; per device: memory in use / capacity;
//  * action: per slot a device head (K options) and a share-level head
//    (U options, level = index + 1), repaired by
//    InssProvisioning::FromAction, then batch sizes by BDA;
//  * per slot and step, with capacity c = b / t_inf, backlog G and
//    arrivals A = lambda: served = min(G + A, c), the rest stays queued
//    up to what c can still serve within the SLO, the excess is dropped;
//    when BDA's worst task breaks the SLO, the batch positions whose Eq. 2
//    wait breaks it are late, and with queueing_check so are the share
//    of the others whose wait exceeds the slack left (the tail
//    RoundWaitTailProbability, the form the shipped checkpoints were
//    trained with; it understates batch 1's light-load tail, see
//    queue_wait.h); a device whose memory is exceeded serves
//    nothing and every task on it violates;
//  * reward (Eq. 3): sum_i c_i / H_i - omega v_i, v_i the violating
//    fraction of the slot's tasks in the step, omega = 100.
struct InssEnvironmentOptions {
  int steps = 200;
  double presence_probability = 0.75;
  double min_rate_fraction = 0.1;
  double max_rate_fraction = 0.9;
  double rate_step_fraction = 0.05;
  int rate_change_steps = 10;
  std::vector<double> slo_factors = {5, 10};
  double penalty = 100;  // omega
};

class InssEnvironment {
 public:
  struct Step {
    std::vector<float> state;  // s'
    double reward = 0;
    double violation_fraction = 0;  // over all tasks of the step
    double capacity_sum = 0;        // sum c_i / H_i
    bool done = false;
  };

  // `cluster` must have a latency model for every slot.
  InssEnvironment(InssCluster cluster, InssEnvironmentOptions options,
                  uint64_t seed);

  int state_size() const { return StateSize(cluster_); }
  int slots() const { return static_cast<int>(cluster_.slots().size()); }
  const InssCluster& cluster() const { return cluster_; }
  const InssEnvironmentOptions& options() const { return options_; }

  std::vector<float> Reset();
  // `action`: I device choices then I level indices (0-based).
  Step Apply(const std::vector<int>& action);

  static int StateSize(const InssCluster& cluster) {
    return 6 * static_cast<int>(cluster.slots().size()) + cluster.gpus();
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
  InssCluster cluster_;
  InssEnvironmentOptions options_;
  std::mt19937_64 rng_;
  int t_ = 0;
  std::vector<double> rates_, lo_, hi_, step_, backlog_;
  std::vector<int> direction_;
  InssProvisioning current_;
};

}  // namespace tessera
