#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/model_repository.h"
#include "config.pb.h"
#include "frontend/backend_control.h"
#include "frontend/profile_store.h"
#include "frontend/replan_trigger.h"
#include "frontend/request_monitor.h"
#include "frontend/router.h"
#include "frontend/unloaded_models.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Makes and installs plans: snapshot of the live backends -> policy ->
// ApplyPlan on every backend at once (rolled back on all if one refuses)
// -> routing switch to new gpulet workers (queued calls handed over) ->
// drain of the retired workers -> CommitPlan on every backend at once.
// Owns the plan in force, the policy, the calls parked while a plan
// change is under way, and the retired workers. Thread-safe; one
// PlanAndApply at a time (the frontend's planner thread).
class PlanCoordinator {
 public:
  struct Options {
    FrontendConfig config;  // defaults applied
    // Deadline of ApplyPlan and CommitPlan (ApplyPlan waits for proxies to
    // load and warm up).
    absl::Duration backend_call_timeout = absl::Seconds(300);
    // If set, every plan installed is written here (text format, replaced
    // atomically) once the backends committed it.
    std::string plan_file;
  };
  // What it has done so far (for tests, metrics and logs).
  struct Stats {
    int64_t plans = 0;              // plans installed
    int64_t gpulets_started = 0;    // new gpulets across plan changes
    int64_t calls_handed_over = 0;  // queued calls moved to new gpulets
    int64_t plan_failures = 0;
    int64_t standby_switches = 0;  // gpulets moved to their standby
  };
  // Borrowed; all must outlive the coordinator.
  struct Deps {
    const ModelRepository* repository = nullptr;
    const ProfileStore* profiles = nullptr;
    Router* router = nullptr;
    RequestMonitor* monitor = nullptr;
    ReplanTrigger* trigger = nullptr;
    const UnloadedModels* unloaded = nullptr;
    const Clock* clock = nullptr;
  };

  PlanCoordinator(Options options, Deps deps,
                  std::shared_ptr<const SchedulingPolicy> policy);

  // The backends to plan over (borrowed); call once, before the first
  // PlanAndApply and before any thread that plans starts.
  void SetBackends(std::vector<BackendControl*> backends);

  // One attempt for `reason`; on failure the plan in force stays.
  absl::Status PlanAndApply(const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);

  // The next plan is made with `policy`; a plan being made finishes with
  // the policy it began with.
  void SetPolicy(std::shared_ptr<const SchedulingPolicy> policy)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<const SchedulingPolicy> policy() const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Whether `policy` can plan the cluster as it is now (the live backends,
  // the loaded models, their rates); installs nothing.
  absl::Status CheckPolicy(const SchedulingPolicy& policy) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // The plan in force (epoch 0 before the first).
  Plan current_plan() const ABSL_LOCKS_EXCLUDED(mu_);
  // The plan in force's epoch, or 0 while a plan change is under way
  // (backends' epochs are in flux then).
  int64_t SettledEpoch() const ABSL_LOCKS_EXCLUDED(mu_);
  // The heartbeat to `backend_id`: UNROUTED once a settled plan (its
  // retired workers' batches answered) routes nothing to it, ROUTED while
  // the plan in force does or a plan change is under way.
  HealthRequest Heartbeat(const std::string& backend_id) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // At shutdown, once no call is routed any more: tells every backend, all
  // at once (each waited for up to `timeout`), that no plan of this
  // frontend routes to it, so one that is draining meanwhile (a rolling
  // restart) exits without waiting for heartbeats that will not come.
  void SayFarewell(absl::Duration timeout) const;
  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  void CountPlanFailure() ABSL_LOCKS_EXCLUDED(mu_);
  void CountStandbySwitch() ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until a plan is installed, Stop() is called or `timeout`
  // passes; true if a plan is installed.
  bool WaitForPlan(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks up to `timeout` unless Stop() was called; true if stopped.
  bool SleepUnlessStopped(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Drops the retired workers still waited for (at shutdown, after the
  // backend streams closed).
  void DropRetired();

 private:
  // The live backends (by id) and what they have, asked all at once; the
  // nodes in the order of SetBackends.
  absl::Status CollectNodes(std::map<std::string, BackendControl*>* backends,
                            std::vector<NodeInfo>* nodes) const;
  absl::Status CheckNode(const BackendControl& backend,
                         const NodeInfo& info) const;
  // The snapshot the policy sees: the live nodes' devices, the loaded
  // models and their observed rates (not below min_rate_rps).
  ClusterSnapshot MakeSnapshot(const std::vector<NodeInfo>& nodes,
                               const Plan& current) const;
  // The policy's plan for `snapshot`, scaled down when overloaded, with
  // its epoch, reason and gpulet ids (`fresh`: how many are new).
  absl::StatusOr<Plan> MakePlan(const std::string& reason,
                                const SchedulingPolicy& policy,
                                const ClusterSnapshot& snapshot,
                                const Plan& current, int* fresh) const;
  // Waits, up to the drain timeout, for the retired workers' batches;
  // those still busy are kept until shutdown.
  void DrainRetired(const std::vector<std::shared_ptr<GpuletWorker>>& retired);
  // ApplyPlan on every backend at once; if one refuses, those that
  // accepted go back to `current`. The gpulets' statuses by id.
  absl::StatusOr<std::map<std::string, GpuletStatus>> ApplyEverywhere(
      const Plan& plan, const Plan& current,
      const std::map<std::string, BackendControl*>& backends);
  // Installs the new workers; the retired ones hand over their queued
  // calls (counted in `handed_over`).
  std::vector<std::shared_ptr<GpuletWorker>> SwitchRouting(
      const Plan& plan, const ClusterSnapshot& snapshot,
      const std::map<std::string, GpuletStatus>& statuses,
      const std::map<std::string, BackendControl*>& backends,
      int64_t* handed_over);
  void CommitEverywhere(const Plan& plan,
                        const std::map<std::string, BackendControl*>& backends);
  void WritePlanFile(const Plan& plan) const;
  std::vector<std::shared_ptr<GpuletWorker>> MakeWorkers(
      const Plan& plan, const ClusterSnapshot& snapshot,
      const std::map<std::string, GpuletStatus>& statuses,
      const std::map<std::string, BackendControl*>& backends);
  // Routes `call` again (a retired gpulet handed it over).
  void Reroute(std::unique_ptr<InferCall> call);
  // A call whose gpulet a backend stopped for a stop-then-start swap: held
  // until the plan being applied is routed, then routed again.
  void RetryAfterSwap(std::unique_ptr<InferCall> call) ABSL_LOCKS_EXCLUDED(mu_);
  void BeginChange() ABSL_LOCKS_EXCLUDED(mu_);
  // Ends parking and routes the parked calls again.
  void ReleaseParked() ABSL_LOCKS_EXCLUDED(mu_);
  void EndChange() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  const Deps deps_;
  std::vector<BackendControl*> backends_;

  mutable absl::Mutex mu_;
  std::shared_ptr<const SchedulingPolicy> policy_ ABSL_GUARDED_BY(mu_);
  Plan plan_ ABSL_GUARDED_BY(mu_);
  bool changing_ ABSL_GUARDED_BY(mu_) = false;
  // From the start of a plan change until its routing switch: calls of
  // stopped gpulets are parked, not routed back to them.
  bool parking_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<InferCall>> parked_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Retired workers with batches still in flight after the drain timeout:
  // kept until shutdown, as those batches' callbacks point to them.
  std::vector<std::shared_ptr<GpuletWorker>> graveyard_;  // planner only
};

}  // namespace tessera
