#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/latency_model.h"
#include "plan.pb.h"
#include "policy_rules.pb.h"
#include "scheduler/model_demand.h"
#include "scheduler/profile_fits.h"
#include "scheduler/scheduling_policy.h"
#include "scheduler/time_share_solver.h"

namespace tessera {

// A policy's working copy of one GPU: its partitions ("slots"), each free
// or serving slices with a schedule. Value type.
class GpuLayout {
 public:
  struct Slot {
    double share_percent = 100;
    std::vector<Slice> slices;  // empty: free
    GpuletSchedule schedule;
    // A gpulet of a plan in force that is to stay as it is: no model is
    // merged into it (PlanRepair).
    bool pinned = false;
    bool free() const { return slices.empty(); }
  };

  explicit GpuLayout(const DeviceSnapshot* device) : device_(device) {
    slots_.push_back(Slot{});
  }
  // A GPU already partitioned into free slots of these shares (percent,
  // summing to <= 100), e.g. {40, 60}.
  GpuLayout(const DeviceSnapshot* device, const std::vector<double>& shares)
      : device_(device) {
    for (double s : shares) slots_.push_back(Slot{s, {}, {}});
  }

  const DeviceSnapshot* device() const { return device_; }
  std::vector<Slot>& slots() { return slots_; }
  const std::vector<Slot>& slots() const { return slots_; }
  bool used() const;

  // Splits the whole-GPU free slot into `share` and 100 - share; returns
  // the index of the `share` slot. Requires a single free 100 % slot.
  int Split(double share);

  // Re-solves every allocated slot with latencies inflated by the
  // interference of the other slots' slices (at their current batch
  // sizes), a few rounds until batch sizes settle. False if some slot has
  // no feasible schedule. With a null model, slots are solved solo.
  bool Resolve(const InterferenceModel* interference);
  // Solves slot `i` alone, its latencies inflated by the interference of
  // the other slots' slices at their current batch sizes (solo with a null
  // model); the other slots keep their schedules. False (and slot `i`
  // unchanged) if it has no feasible schedule. A free slot is feasible.
  bool ResolveSlot(size_t i, const InterferenceModel* interference);

  // Inflate by the expected interference instead of the worst case: a
  // neighbour slice busy a fraction u of its duty cycle adds u (f - 1),
  // the slices of one neighbour gpulet add up, and the worst neighbour
  // gpulet counts (GpuletRules.occupancy_weighted_interference).
  void set_occupancy_weighted_interference(bool on) {
    occupancy_weighted_ = on;
  }
  bool occupancy_weighted_interference() const { return occupancy_weighted_; }
  // Plan at max(latency_scale, interference factor) x solo, not their
  // product (GpuletRules.interference_within_headroom).
  void set_interference_within_headroom(bool on) {
    interference_headroom_ = on ? 1 : 0;
  }
  // Plan at max(latency_scale, h x interference factor) x solo
  // (GpuletRules.interference_headroom); 0: their product; 1: as
  // set_interference_within_headroom(true).
  void set_interference_headroom(double h) { interference_headroom_ = h; }
  // The three settings above from gpulet's rules, as gpulet's placer and
  // `ideal` plan.
  void ApplyChargeRules(const GpuletRules& rules);
  double interference_headroom() const { return interference_headroom_; }

 private:
  const DeviceSnapshot* device_;
  std::vector<Slot> slots_;
  bool occupancy_weighted_ = false;
  double interference_headroom_ = 0;
};

class ResolveMemo;

// Demands and latency models a policy plans with, built from a snapshot.
// Latency models come from each model's profile for the devices'
// profile_key (the cluster is homogeneous: the first device's key).
class PolicyInputs {
 public:
  // Rates and latencies carry the options' headroom.
  static absl::StatusOr<std::unique_ptr<PolicyInputs>> FromSnapshot(
      const ClusterSnapshot& snapshot, const PolicyOptions& options);

  const std::vector<ModelDemand>& demands() const { return demands_; }
  const std::vector<const DeviceSnapshot*>& gpus() const { return gpus_; }
  // The partition sizes the devices allow (ShareGrid).
  const std::vector<double>& share_grid() const { return share_grid_; }
  // Whether these inputs carry `rules`' headroom and queueing settings,
  // i.e. a policy planning under `rules` may use them as its own.
  bool BuiltUnder(const SharedRules& rules) const;
  // The fits the options carried, made for this demand's profile, batch
  // limit and latency scale; null when there are none (fit anew).
  const ProfileFits::IgniterFit* IgniterFitOf(const ModelDemand& d) const;
  const LasCoefficients* LasFitOf(const ModelDemand& d) const;
  // The memo of layouts resolved against these demands during one planning
  // call (PlanCheck's), like the demands' own memos.
  ResolveMemo& resolve_memo() const { return *resolve_memo_; }

  PolicyInputs(const PolicyInputs&) = delete;
  PolicyInputs& operator=(const PolicyInputs&) = delete;
  ~PolicyInputs();

 private:
  PolicyInputs();

  // Each model's latency model: the fits' own or one of owned_models_.
  std::map<std::string, const LatencyModel*> models_;
  std::map<std::string, LatencyModel> owned_models_;
  std::shared_ptr<const ProfileFits> fits_;
  // ProfileFits::KeyOf each model's profile, by model (with fits only).
  std::map<std::string, std::string> profile_keys_;
  std::vector<ModelDemand> demands_;
  std::vector<const DeviceSnapshot*> gpus_;
  std::vector<double> share_grid_;
  SharedRules shared_rules_;
  std::unique_ptr<ResolveMemo> resolve_memo_;
};

// Turns layouts into a plan (used GPUs only).
Plan BuildPlan(const std::vector<GpuLayout>& gpus, const std::string& policy,
               const std::string& reason);

// RESOURCE_EXHAUSTED naming the model and why.
absl::Status Unschedulable(const ModelDemand& m, const std::string& why);

}  // namespace tessera
