#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "perfmodel/las_model.h"
#include "perfmodel/latency_model.h"
#include "scheduler/inputs_policy.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// The KAIST latency-aware scheduler (Kim, Lee, Youn; "LAS"), registered as
// "las": per service a batch size b and a usage ratio p, and a GPU, to
// maximise sum_i b_i / (p_i T_i) (Eq. 12, throughput per unit of share)
// subject to T_i <= L_i (13) and b_i / T_i >= lambda_i (14), with
// T = t_queue + t_proc (1 + I(X)) from perfmodel/las_model.h fitted to the
// snapshot's profiles (the digest's two-step fit).
//
// The paper's Algorithm 1 leaves its adjustment rules open; this is the
// digest's concrete version (Sec. 2.5), with these choices:
//  * strict partitioning: sum of p on a GPU <= 100 % (our gpulets are
//    partitions, as in gpu-let), and the device's memory when known;
//  * I(X) for a service = the sum over its co-runners of (factor - 1) of
//    the configured interference model (the paper's weighted sum of the
//    co-runners' L2 and DRAM use; none configured: I = 0);
//  * the queueing term uses the interfered processing time (the digest's
//    safer reading; the paper's Eq. 6 uses t_proc alone);
//  * with PolicyOptions::queueing_check (the default), the queueing term
//    is the M/D/1 wait's 99th percentile rather than its mean;
//  * the SLO check adds the time to collect a batch, (b - 1) / lambda,
//    which the paper's model leaves out (the digest's pitfall: at
//    30 req/s a batch of 8 takes 233 ms to fill);
//  * a service no single GPU can carry is split into k equal replicas,
//    the smallest k that makes one replica feasible (the paper assumes
//    one GPU per service);
//  * placement: replicas in descending p on the first GPU with room
//    (GPUs open in order, so the plan uses as few as first fit does);
//    then up to 20 rounds: every service re-picks its best (b, p) under
//    its co-runners' current interference and the room left on its GPU;
//    one that has none moves to the first GPU where it fits. The plan is
//    returned only if every constraint holds at the end.
// Candidate shares: the device grid when the devices declare one (cpu),
// else 10, 20, ..., 100 % (the digest's Pset), never below a profile's
// smallest share.
class LasPolicy : public InputsPolicy {
 public:
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);

  std::string name() const override { return "las"; }

  // Eq. 3-5 coefficients of one model fitted from its latency model (times
  // `latency_scale`) over batches 1..max_batch.
  static absl::StatusOr<LasCoefficients> FitModel(const LatencyModel& latency,
                                                  double latency_scale,
                                                  int max_batch);

 protected:
  const PolicyOptions& options() const override { return options_; }
  absl::StatusOr<Plan> PlanFrom(const PolicyInputs& inputs) const override;

 private:
  explicit LasPolicy(PolicyOptions options) : options_(std::move(options)) {}
  PolicyOptions options_;
};

}  // namespace tessera
