#include "scheduler/igniter_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/igniter_provisioner.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

// Batch sizes the fits sample: the profiled ones up to the model's cap.
std::vector<int> FitBatches(const LatencyModel& lm, int max_batch) {
  std::vector<int> out;
  for (int b : lm.batches()) {
    if (b <= max_batch) out.push_back(b);
  }
  if (out.empty() || out.back() != max_batch) out.push_back(max_batch);
  return out;
}

// alpha_cache of `self` (Eq. 8) from the interference model: slow-downs
// beside every co-runner at sampled cells on complementary shares,
// regressed through the origin on the co-runner's L2 utilisation.
double FitAlphaCache(const InterferenceModel& interference,
                     const ModelDemand& self,
                     const std::vector<const ModelDemand*>& others,
                     const std::vector<const IgniterWorkload*>& others_w) {
  double sxy = 0, sxx = 0;
  const double self_min = self.latency->shares().front();
  for (int b : {1, 4, 16}) {
    if (b > self.max_batch) continue;
    for (double p : {20.0, 40.0, 50.0, 60.0, 80.0}) {
      if (p < self_min) continue;
      const Placement me{self.latency, b, p};
      for (size_t j = 0; j < others.size(); ++j) {
        const double q = 100 - p;
        if (q < others[j]->latency->shares().front()) continue;
        for (int bo : {1, 4, 16}) {
          if (bo > others[j]->max_batch) continue;
          const double y =
              interference.Factor(me, {others[j]->latency, bo, q}) - 1;
          const double x = IgniterModel::L2Percent(*others_w[j], bo, q);
          sxy += x * y;
          sxx += x * x;
        }
      }
    }
  }
  return sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
}

}  // namespace

std::unique_ptr<SchedulingPolicy> IgniterPolicy::Make(
    const PolicyOptions& options, IgniterPacking packing) {
  // PolicyInputs plan with SharedRules' margins: use iGniter's.
  PolicyOptions o = options;
  o.rules = WithFamilyMargins(o.rules, o.rules.igniter().latency_headroom(),
                              o.rules.igniter().rate_headroom(),
                              o.rules.igniter().queueing_tail());
  return std::unique_ptr<SchedulingPolicy>(
      new IgniterPolicy(std::move(o), packing));
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> IgniterPolicy::Create(
    const PolicyOptions& options) {
  return Make(options, IgniterPacking::kAlloc);
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> IgniterPolicy::CreateFfd(
    const PolicyOptions& options) {
  return Make(options, IgniterPacking::kFirstFitLower);
}

absl::StatusOr<IgniterWorkload> IgniterPolicy::FitWorkload(
    const LatencyModel& lm, double latency_scale, int max_batch,
    double* worst_fit_error) {
  IgniterWorkload w;
  w.model = lm.model();
  // Only shares profiled over the batch sizes the model may use: a share
  // measured at batch 1 alone (the V100 data's 10 %) says nothing about
  // larger batches there, and the plan must not rely on the fit's guess.
  const std::vector<int> batches = FitBatches(lm, max_batch);
  std::vector<double> shares;
  for (size_t i = 0; i < lm.shares().size(); ++i) {
    if (lm.ProfiledUpTo(i) >= std::min(batches.back(), lm.max_batch())) {
      shares.push_back(lm.shares()[i]);
    }
  }
  if (shares.empty()) shares = lm.shares();
  w.min_share_percent = shares.front();
  std::vector<ActiveTimeSample> samples;
  for (int b : batches) {
    for (double p : shares) {
      samples.push_back({b, p, lm.LatencyMs(b, p) * latency_scale});
    }
  }
  auto k = FitActiveTime(samples);
  if (!k.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", lm.model(), "': ", k.status().message()));
  }
  w.k = *k;
  std::vector<double> ability, l2;
  double worst = 0;
  for (const auto& s : samples) {
    worst = std::max(
        worst, std::fabs(IgniterModel::ActiveMs(w, s.batch, s.share_percent) /
                             s.active_ms -
                         1));
    ability.push_back(IgniterModel::Ability(w, s.batch, s.share_percent));
    l2.push_back(lm.L2Util(s.batch, s.share_percent));
  }
  const auto c = FitLine(ability, l2);
  w.alpha_l2 = c[0];
  w.beta_l2 = c[1];
  if (worst_fit_error) *worst_fit_error = worst;
  return w;
}

absl::StatusOr<Plan> IgniterPolicy::PlanFrom(const PolicyInputs& inputs) const {
  const auto& demands = inputs.demands();
  const auto& gpus = inputs.gpus();
  IgniterHardware hw;  // power, scheduling growth and PCIe: off
  bool grid_declared = true;
  for (const DeviceSnapshot* d : gpus) {
    grid_declared = grid_declared && !d->allowed_shares.empty();
  }
  hw.share_unit_percent = grid_declared ? inputs.share_grid().front() : 2.5;
  const IgniterModel model(hw);

  std::vector<IgniterWorkload> workloads(demands.size());
  double worst_fit = 0;
  std::string worst_model;
  for (size_t i = 0; i < demands.size(); ++i) {
    double err = 0;
    if (const auto* fit = inputs.IgniterFitOf(demands[i])) {
      workloads[i] = fit->workload;
      err = fit->worst_fit_error;
    } else {
      ASSIGN_OR_RETURN(workloads[i], FitWorkload(*demands[i].latency,
                                                 demands[i].latency_scale,
                                                 demands[i].max_batch, &err));
    }
    workloads[i].model = demands[i].name;
    if (err > worst_fit) {
      worst_fit = err;
      worst_model = demands[i].name;
    }
  }
  if (options_.interference) {
    for (size_t i = 0; i < demands.size(); ++i) {
      std::vector<const ModelDemand*> others;
      std::vector<const IgniterWorkload*> others_w;
      for (size_t j = 0; j < demands.size(); ++j) {
        others.push_back(&demands[j]);
        others_w.push_back(&workloads[j]);
      }
      workloads[i].alpha_cache =
          FitAlphaCache(*options_.interference, demands[i], others, others_w);
    }
  }
  std::vector<IgniterRequest> requests;
  for (size_t i = 0; i < demands.size(); ++i) {
    const IgniterRules& rules = options_.rules.igniter();
    IgniterRequest q{&workloads[i], demands[i].slo_ms, demands[i].rate_rps,
                     demands[i].max_batch, rules.queueing_check()};
    const ModelDemand& d = demands[i];
    q.queueing_tail = d.queueing_tail;
    q.burst_tail = d.burst_tail;
    q.bulk_queue_wait = d.bulk_queue_wait;
    q.round_robin_arrivals = d.round_robin_arrivals;
    q.lone_batch_queue = d.lone_batch_queue;
    q.lone_queue_expiry = d.lone_queue_expiry;
    if (rules.latency_floor()) {
      q.solo_floor_ms = [&d](int batch, double share) {
        return d.latency->LatencyMs(batch, share) * d.latency_scale;
      };
    }
    q.replicas = rules.replicas();
    q.whole_gpu_batch1_factor =
        std::min(rules.whole_gpu_batch1_latency_headroom(), d.latency_scale) /
        d.latency_scale;
    requests.push_back(std::move(q));
  }
  ASSIGN_OR_RETURN(
      auto provision,
      ProvisionIgniter(model, requests, static_cast<int>(gpus.size()),
                       options_.rules.max_partitions_per_gpu(), packing_));

  Plan plan;
  plan.set_policy(name());
  plan.set_reason(absl::StrFormat(
      "%s, r_unit %.1f%%, worst k1..k5 fit error %.1f%% "
      "(%s)",
      packing_ == IgniterPacking::kAlloc ? "iGniter provisioning"
                                         : "FFD+ (r_lower, first fit)",
      hw.share_unit_percent, 100 * worst_fit, worst_model));
  for (size_t g = 0; g < provision.gpus.size(); ++g) {
    DevicePlan* device = plan.add_devices();
    device->set_backend_id(gpus[g]->backend_id);
    device->set_device_id(gpus[g]->device_id);
    int k = 0;
    for (const IgniterPlacement& p : provision.gpus[g]) {
      GpuletPlan* gp = device->add_gpulets();
      gp->set_gpulet_id(absl::StrCat(gpus[g]->backend_id, "/",
                                     gpus[g]->device_id, "/g", k++));
      gp->set_share_percent(p.share_percent);
      if (options_.standby_shadows) {
        gp->set_standby_share_percent(p.standby_share_percent);
      }
      ModelAssignment* a = gp->add_models();
      a->set_model(demands[p.request].name);
      a->set_batch_size(p.batch);
      a->set_duty_cycle_ms(0);
      a->set_rate_rps(p.rate_rps);  // with headroom, as every policy's
    }
  }
  return plan;
}

REGISTER_SCHEDULING_POLICY("igniter", IgniterPolicy::Create);
REGISTER_SCHEDULING_POLICY("igniter-ffd", IgniterPolicy::CreateFfd);

}  // namespace tessera
