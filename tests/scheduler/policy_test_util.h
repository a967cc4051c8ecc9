#pragma once

// Hand-built profiles and snapshots for policy tests.

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "profile.pb.h"
#include "scheduler/policy_registry.h"
#include "scheduler/queue_wait.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {
namespace testing {

// A synthetic profile on the gpulet share grid (plus 100 %):
//   L(b, p) = (fixed_ms + per_item_ms * b) * 100 / p
// with constant L2/DRAM utilisation.
inline ModelProfile LinearProfile(const std::string& model, double fixed_ms,
                                  double per_item_ms, int max_batch = 32,
                                  double l2 = 20, double dram = 30) {
  ModelProfile p;
  p.set_model(model);
  p.set_device_kind("test-gpu");
  for (double share : {20.0, 40.0, 50.0, 60.0, 80.0, 100.0}) {
    for (int b = 1; b <= max_batch; ++b) {
      LatencyPoint* pt = p.add_latency();
      pt->set_batch_size(b);
      pt->set_share_percent(share);
      pt->set_latency_ms((fixed_ms + per_item_ms * b) * 100 / share);
      pt->set_l2_util_percent(l2);
      pt->set_dram_util_percent(dram);
    }
  }
  return p;
}

// A profile with a knee: L(b, p) = (2 + b) * 100 / p ms for b = 1..32 on
// the default grid, times `slowdown` on every partition below
// `slow_below_percent`.
inline ModelProfile KneeProfile(const std::string& model,
                                double slow_below_percent, double slowdown) {
  ModelProfile p;
  p.set_model(model);
  for (double share : {20.0, 40.0, 50.0, 60.0, 80.0, 100.0}) {
    for (int b = 1; b <= 32; ++b) {
      LatencyPoint* pt = p.add_latency();
      pt->set_batch_size(b);
      pt->set_share_percent(share);
      const double slow = share < slow_below_percent ? slowdown : 1.0;
      pt->set_latency_ms(slow * (2 + b) * 100 / share);
    }
  }
  return p;
}

// Options for arithmetic checked by hand: the papers' deterministic rules,
// no headroom and no queueing bound, fixed batches' waits (when a test
// turns a queueing term on) charged as whole batches (neither the bulk
// queue nor the batch queue), LAS's tail (when on)
// in all three of its checks; the other additions as "tessera".
inline PolicyOptions PaperRules(
    std::shared_ptr<const InterferenceModel> interference = nullptr) {
  PolicyOptions options;
  options.interference = std::move(interference);
  SharedRules* shared = options.rules.mutable_shared();
  shared->set_latency_headroom(1.0);
  shared->set_rate_headroom(1.0);
  shared->set_queueing_check(false);
  shared->set_bulk_queue_wait(false);
  shared->set_round_robin_arrivals(false);
  shared->set_lone_batch_queue(false);
  options.rules.mutable_las()->set_tail_wait_slo_only(false);
  options.rules.mutable_igniter()->set_latency_headroom(1.0);
  options.rules.mutable_igniter()->set_rate_headroom(1.0);
  options.rules.mutable_las()->set_latency_headroom(1.0);
  options.rules.mutable_las()->set_rate_headroom(1.0);
  options.rules.mutable_inss()->set_latency_headroom(1.0);
  options.rules.mutable_inss()->set_rate_headroom(1.0);
  options.rules.mutable_igniter()->set_queueing_check(false);
  options.rules.mutable_las()->set_tail_wait(false);
  options.rules.mutable_inss()->set_fill_wait(false);
  // The paper preset's tails (the hand-computed answers use them).
  shared->set_queueing_tail(kQueueingTail);
  options.rules.mutable_igniter()->set_queueing_tail(kQueueingTail);
  options.rules.mutable_las()->set_queueing_tail(kQueueingTail);
  options.rules.mutable_inss()->set_queueing_tail(kQueueingTail);
  return options;
}

// Creates the registered `policy` with `options` and runs it once.
inline absl::StatusOr<Plan> RunPolicyWith(const std::string& policy,
                                          const ClusterSnapshot& snapshot,
                                          const PolicyOptions& options) {
  auto p = PolicyRegistry::Create(policy, options);
  if (!p.ok()) return p.status();
  return (*p)->Schedule(snapshot);
}

inline ClusterSnapshot Snapshot(int num_gpus) {
  ClusterSnapshot s;
  for (int i = 0; i < num_gpus; ++i) {
    DeviceSnapshot d;
    d.backend_id = "b0";
    d.device_id = "gpu" + std::to_string(i);
    d.kind = DEVICE_KIND_EMULATED;
    d.profile_key = "test-gpu";
    s.devices.push_back(d);
  }
  return s;
}

inline void AddModel(ClusterSnapshot* s, const ModelProfile& profile,
                     double rate_rps, double slo_ms, int max_batch = 32) {
  ModelSnapshot m;
  m.config.set_name(profile.model());
  m.config.set_max_batch_size(max_batch);
  m.config.set_slo_ms(slo_ms);
  m.rate_rps = rate_rps;
  m.profiles["test-gpu"] = profile;
  s->models.push_back(m);
}

// A plan by "tessera" at epoch 1 with one gpulet per (gpu, share, model,
// rate) on backend "b0", id "b0/<gpu>/<model>", batch 1.
inline Plan OneModelGpulets(
    const std::vector<std::tuple<std::string, double, std::string, double>>&
        gpulets) {
  Plan p;
  p.set_policy("tessera");
  p.set_epoch(1);
  for (const auto& [gpu, share, model, rate] : gpulets) {
    DevicePlan* d = nullptr;
    for (DevicePlan& existing : *p.mutable_devices()) {
      if (existing.device_id() == gpu) d = &existing;
    }
    if (d == nullptr) {
      d = p.add_devices();
      d->set_backend_id("b0");
      d->set_device_id(gpu);
    }
    GpuletPlan* g = d->add_gpulets();
    g->set_gpulet_id("b0/" + gpu + "/" + model);
    g->set_share_percent(share);
    ModelAssignment* a = g->add_models();
    a->set_model(model);
    a->set_batch_size(1);
    a->set_rate_rps(rate);
  }
  return p;
}

}  // namespace testing
}  // namespace tessera
