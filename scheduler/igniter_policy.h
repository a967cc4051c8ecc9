#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "perfmodel/igniter_model.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/latency_model.h"
#include "scheduler/igniter_provisioner.h"
#include "scheduler/inputs_policy.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// iGniter (Xu et al., TPDS 2023), registered as "igniter": each model gets
// one partition (or whole-GPU replicas plus a residue partition when one
// GPU is not enough) with a fixed batch size b = b_appr (execution gets
// half the SLO), placed by Algorithms 1-2 (see igniter_provisioner.h) on
// iGniter's performance model (perfmodel/igniter_model.h).
//
// The model's coefficients are fitted from what a snapshot carries, the
// profiles every policy plans with:
//  * k1..k5 (Eq. 11) from the profile's L(b, p) cells (headroom
//    included), relative least squares;
//  * L2 utilisation linear in ability from the cells' L2 counters;
//  * alpha_cache from the configured interference model, asked for the
//    slow-down of every model beside every other at sampled cells and
//    regressed on the co-runner's L2 (Eq. 8's form), as iGniter fits it
//    from co-location runs. Without an interference model or L2 counters
//    the term is off.
// Terms whose inputs profiles do not carry are switched off explicitly:
// power and clock (no power readings), the scheduling-delay growth (no
// kernel counts) and host-device transfers (no PCIe model). r_unit is
// 2.5 % on GPUs; on devices with a share grid (cpu), the grid's step.
// Shares below a profile's smallest share are never used (pitfall P14).
// No prediction goes below the profile's own L(b, p) (headroom included):
// Eq. 11 fitted to a profile undershoots at small shares and batches, and
// plans built on the undershoot missed their SLO at light loads (a
// Tessera addition, IgniterRules.latency_floor).
//
// "igniter-ffd" is the paper's FFD+ baseline (Sec. 5.1) on the same model
// and rules: every workload at its r_lower, first-fit decreasing, no ALLOC
// (IgniterPacking::kFirstFitLower).
class IgniterPolicy : public InputsPolicy {
 public:
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const PolicyOptions& options);
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreateFfd(
      const PolicyOptions& options);

  std::string name() const override {
    return packing_ == IgniterPacking::kAlloc ? "igniter" : "igniter-ffd";
  }

  // The workload coefficients of one model fitted from its latency model
  // (times `latency_scale`), without alpha_cache; and the worst relative
  // error of the k1..k5 fit over the cells (for the plan's reason).
  static absl::StatusOr<IgniterWorkload> FitWorkload(
      const LatencyModel& latency, double latency_scale, int max_batch,
      double* worst_fit_error);

 protected:
  const PolicyOptions& options() const override { return options_; }
  absl::StatusOr<Plan> PlanFrom(const PolicyInputs& inputs) const override;

 private:
  // Either packing, with iGniter's own planning headroom.
  static std::unique_ptr<SchedulingPolicy> Make(const PolicyOptions& options,
                                                IgniterPacking packing);
  IgniterPolicy(PolicyOptions options, IgniterPacking packing)
      : options_(std::move(options)), packing_(packing) {}
  PolicyOptions options_;
  IgniterPacking packing_;
};

}  // namespace tessera
