#include "frontend/plan_coordinator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "frontend/cluster_snapshot_builder.h"
#include "scheduler/device_snapshot.h"
#include "scheduler/overload_planning.h"
#include "scheduler/plan_ids.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

// Runs `call` on every backend at once, one thread each, and returns the
// results in their order: a plan change takes the slowest backend's time,
// not the sum of all.
template <typename Call>
auto OnEach(const std::vector<BackendControl*>& backends, Call call) {
  using Result = decltype(call(static_cast<BackendControl*>(nullptr)));
  std::vector<std::optional<Result>> results(backends.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < backends.size(); ++i) {
    threads.emplace_back(
        [&results, &call, i, b = backends[i]] { results[i].emplace(call(b)); });
  }
  for (std::thread& t : threads) t.join();
  std::vector<Result> out;
  out.reserve(results.size());
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

// OnEach in the map's order.
template <typename Call>
auto OnEveryBackend(const std::map<std::string, BackendControl*>& backends,
                    Call call) {
  std::vector<BackendControl*> in_order;
  for (const auto& [id, backend] : backends) in_order.push_back(backend);
  return OnEach(in_order, std::move(call));
}

}  // namespace

PlanCoordinator::PlanCoordinator(Options options, Deps deps,
                                 std::shared_ptr<const SchedulingPolicy> policy)
    : options_(std::move(options)),
      deps_(std::move(deps)),
      policy_(std::move(policy)) {}

void PlanCoordinator::SetBackends(std::vector<BackendControl*> backends) {
  backends_ = std::move(backends);
}

void PlanCoordinator::SetPolicy(
    std::shared_ptr<const SchedulingPolicy> policy) {
  absl::MutexLock lock(&mu_);
  policy_ = std::move(policy);
}

std::shared_ptr<const SchedulingPolicy> PlanCoordinator::policy() const {
  absl::MutexLock lock(&mu_);
  return policy_;
}

Plan PlanCoordinator::current_plan() const {
  absl::MutexLock lock(&mu_);
  return plan_;
}

int64_t PlanCoordinator::SettledEpoch() const {
  absl::MutexLock lock(&mu_);
  return changing_ ? 0 : plan_.epoch();
}

HealthRequest PlanCoordinator::Heartbeat(const std::string& backend_id) const {
  HealthRequest request;
  absl::MutexLock lock(&mu_);
  request.set_routing(HealthRequest::ROUTING_ROUTED);
  if (changing_) return request;
  request.set_settled_epoch(plan_.epoch());
  const bool routed = std::any_of(
      plan_.devices().begin(), plan_.devices().end(),
      [&](const DevicePlan& d) { return d.backend_id() == backend_id; });
  if (!routed) request.set_routing(HealthRequest::ROUTING_UNROUTED);
  return request;
}

void PlanCoordinator::SayFarewell(absl::Duration timeout) const {
  HealthRequest farewell;
  farewell.set_routing(HealthRequest::ROUTING_UNROUTED);
  farewell.set_settled_epoch(std::numeric_limits<int64_t>::max());
  OnEach(backends_,
         [&](BackendControl* b) { return b->Health(farewell, timeout).ok(); });
}

PlanCoordinator::Stats PlanCoordinator::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void PlanCoordinator::CountPlanFailure() {
  absl::MutexLock lock(&mu_);
  ++stats_.plan_failures;
}

void PlanCoordinator::CountStandbySwitch() {
  absl::MutexLock lock(&mu_);
  ++stats_.standby_switches;
}

bool PlanCoordinator::WaitForPlan(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return plan_.epoch() > 0 || stopping_;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout) &&
         plan_.epoch() > 0;
}

bool PlanCoordinator::SleepUnlessStopped(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto stopping = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  return mu_.AwaitWithTimeout(absl::Condition(&stopping), timeout);
}

void PlanCoordinator::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

void PlanCoordinator::DropRetired() { graveyard_.clear(); }

void PlanCoordinator::Reroute(std::unique_ptr<InferCall> call) {
  absl::Status routed = deps_.router->Reroute(call);
  if (!routed.ok()) FinishCall(std::move(call), routed);
}

void PlanCoordinator::RetryAfterSwap(std::unique_ptr<InferCall> call) {
  {
    absl::MutexLock lock(&mu_);
    if (parking_) {
      parked_.push_back(std::move(call));
      return;
    }
  }
  Reroute(std::move(call));
}

void PlanCoordinator::BeginChange() {
  absl::MutexLock lock(&mu_);
  changing_ = true;
  parking_ = true;
}

void PlanCoordinator::ReleaseParked() {
  std::vector<std::unique_ptr<InferCall>> parked;
  {
    absl::MutexLock lock(&mu_);
    parking_ = false;
    parked.swap(parked_);
  }
  for (auto& call : parked) Reroute(std::move(call));
}

void PlanCoordinator::EndChange() {
  {
    absl::MutexLock lock(&mu_);
    changing_ = false;
  }
  ReleaseParked();  // a failed plan change routes them back
}

absl::Status PlanCoordinator::CheckNode(const BackendControl& backend,
                                        const NodeInfo& info) const {
  if (info.backend_id() != backend.id()) {
    return absl::FailedPreconditionError(
        absl::StrCat("backend at ", backend.address(), " says its id is '",
                     info.backend_id(), "', config says '", backend.id(), "'"));
  }
  for (const DeviceInfo& d : info.devices()) {
    if (d.kind() == DEVICE_KIND_EMULATED &&
        std::abs(d.time_scale() - options_.config.time_scale()) > 1e-9) {
      return absl::FailedPreconditionError(absl::StrCat(
          "backend '", backend.id(), "' device '", d.device_id(),
          "' runs at time scale ", d.time_scale(),
          "; this frontend's time_scale is ", options_.config.time_scale()));
    }
  }
  return absl::OkStatus();
}

absl::Status PlanCoordinator::CollectNodes(
    std::map<std::string, BackendControl*>* backends,
    std::vector<NodeInfo>* nodes) const {
  std::vector<BackendControl*> alive;
  for (BackendControl* backend : backends_) {
    if (deps_.trigger->Alive(backend->id())) alive.push_back(backend);
  }
  std::vector<absl::StatusOr<NodeInfo>> infos = OnEach(
      alive,
      [](BackendControl* b) { return b->GetNodeInfo(absl::Seconds(5)); });
  for (size_t i = 0; i < alive.size(); ++i) {
    BackendControl* backend = alive[i];
    if (!infos[i].ok()) {
      return absl::UnavailableError(
          absl::StrCat("backend '", backend->id(), "' at ", backend->address(),
                       ": ", infos[i].status().message()));
    }
    RETURN_IF_ERROR(CheckNode(*backend, *infos[i]));
    (*backends)[backend->id()] = backend;
    nodes->push_back(std::move(*infos[i]));
  }
  if (nodes->empty()) return absl::UnavailableError("no backend is alive");
  return absl::OkStatus();
}

absl::Status PlanCoordinator::CheckPolicy(
    const SchedulingPolicy& policy) const {
  std::map<std::string, BackendControl*> backends;
  std::vector<NodeInfo> nodes;
  RETURN_IF_ERROR(CollectNodes(&backends, &nodes));
  const Plan current = current_plan();
  int fresh = 0;
  return MakePlan("policy check", policy, MakeSnapshot(nodes, current), current,
                  &fresh)
      .status();
}

ClusterSnapshot PlanCoordinator::MakeSnapshot(
    const std::vector<NodeInfo>& nodes, const Plan& current) const {
  ClusterSnapshot snapshot = BuildClusterSnapshot(
      nodes, *deps_.repository, *deps_.profiles, current, deps_.clock->Now());
  const std::set<std::string> unloaded = deps_.unloaded->All();
  snapshot.models.erase(
      std::remove_if(snapshot.models.begin(), snapshot.models.end(),
                     [&](const ModelSnapshot& m) {
                       return unloaded.count(m.config.name()) > 0;
                     }),
      snapshot.models.end());
  const FrontendConfig& config = options_.config;
  const std::map<std::string, double> observed =
      config.rise_window_s() > 0
          ? RisingRates(
                deps_.monitor->Rates(),
                deps_.monitor->Rates(absl::Seconds(config.rise_window_s())),
                config.replan_threshold(), config.min_rate_rps(),
                config.rise_window_s())
          : deps_.monitor->Rates();
  for (ModelSnapshot& m : snapshot.models) {
    auto it = observed.find(m.config.name());
    m.rate_rps = std::max(options_.config.min_rate_rps(),
                          it == observed.end() ? 0.0 : it->second);
  }
  return snapshot;
}

absl::StatusOr<std::map<std::string, GpuletStatus>>
PlanCoordinator::ApplyEverywhere(
    const Plan& plan, const Plan& current,
    const std::map<std::string, BackendControl*>& backends) {
  const std::vector<absl::StatusOr<ApplyPlanResponse>> applied =
      OnEveryBackend(backends, [&](BackendControl* b) {
        return b->ApplyPlan(plan, options_.backend_call_timeout);
      });
  std::map<std::string, GpuletStatus> statuses;
  std::map<std::string, BackendControl*> applied_on;
  absl::Status rejected;
  auto result = applied.begin();
  for (const auto& [id, backend] : backends) {
    const absl::StatusOr<ApplyPlanResponse>& r = *result++;
    if (!r.ok()) {
      if (rejected.ok()) {
        rejected = absl::Status(
            r.status().code(),
            absl::StrCat("backend '", id,
                         "' rejected plan: ", r.status().message()));
      }
      continue;
    }
    applied_on[id] = backend;
    for (const GpuletStatus& s : r->gpulets()) statuses[s.gpulet_id()] = s;
  }
  if (rejected.ok()) return statuses;
  OnEveryBackend(applied_on, [&](BackendControl* b) {
    if (b->ApplyPlan(current, options_.backend_call_timeout).ok()) {
      (void)b->CommitPlan(current.epoch(), options_.backend_call_timeout);
    }
    return 0;
  });
  return rejected;
}

std::vector<std::shared_ptr<GpuletWorker>> PlanCoordinator::SwitchRouting(
    const Plan& plan, const ClusterSnapshot& snapshot,
    const std::map<std::string, GpuletStatus>& statuses,
    const std::map<std::string, BackendControl*>& backends,
    int64_t* handed_over) {
  std::vector<std::shared_ptr<GpuletWorker>> retired =
      deps_.router->Install(MakeWorkers(plan, snapshot, statuses, backends));
  for (auto& w : retired) {
    auto queued = w->Retire(
        [this](std::unique_ptr<InferCall> call) { Reroute(std::move(call)); });
    *handed_over += static_cast<int64_t>(queued.size());
    for (auto& call : queued) Reroute(std::move(call));
  }
  // Calls that met a gpulet stopped for a stop-then-start swap go to the
  // new plan's gpulets.
  ReleaseParked();
  return retired;
}

void PlanCoordinator::CommitEverywhere(
    const Plan& plan, const std::map<std::string, BackendControl*>& backends) {
  const std::vector<absl::Status> committed =
      OnEveryBackend(backends, [&](BackendControl* b) {
        return b->CommitPlan(plan.epoch(), options_.backend_call_timeout);
      });
  auto commit = committed.begin();
  for (const auto& [id, backend] : backends) {
    const absl::Status& c = *commit++;
    if (!c.ok()) {
      spdlog::warn("backend '{}' did not commit plan epoch {}: {}", id,
                   plan.epoch(), c.ToString());
    }
  }
}

void PlanCoordinator::WritePlanFile(const Plan& plan) const {
  if (options_.plan_file.empty()) return;
  absl::Status written = WriteTextProto(options_.plan_file + ".tmp", plan);
  if (written.ok()) {
    std::filesystem::rename(options_.plan_file + ".tmp", options_.plan_file);
  } else {
    spdlog::warn("cannot write the plan to {}: {}", options_.plan_file,
                 written.ToString());
  }
}

absl::Status PlanCoordinator::PlanAndApply(const std::string& reason) {
  BeginChange();
  struct EndOnExit {
    PlanCoordinator* self;
    ~EndOnExit() { self->EndChange(); }
  } end_on_exit{this};

  const absl::Time started = deps_.clock->Now();
  std::map<std::string, BackendControl*> backends;
  std::vector<NodeInfo> nodes;
  RETURN_IF_ERROR(CollectNodes(&backends, &nodes));
  // The policy in force when planning starts: SetPolicy may replace it
  // meanwhile, and this plan then finishes with the one it began with.
  Plan current;
  std::shared_ptr<const SchedulingPolicy> policy;
  {
    absl::MutexLock lock(&mu_);
    current = plan_;
    policy = policy_;
  }
  const ClusterSnapshot snapshot = MakeSnapshot(nodes, current);
  int fresh = 0;
  ASSIGN_OR_RETURN(Plan plan,
                   MakePlan(reason, *policy, snapshot, current, &fresh));
  const absl::Time planned_at = deps_.clock->Now();

  // Phase 1: every live backend starts its new gpulets while the old ones
  // keep serving.
  ASSIGN_OR_RETURN(auto statuses, ApplyEverywhere(plan, current, backends));
  const absl::Time applied_at = deps_.clock->Now();
  // Phase 2: switch routing; queued calls of the retired workers move to
  // the new ones, and calls still routed to them are forwarded.
  int64_t handed_over = 0;
  std::vector<std::shared_ptr<GpuletWorker>> retired =
      SwitchRouting(plan, snapshot, statuses, backends, &handed_over);
  // The planned rates are the observed ones, also when overloaded: a
  // re-plan is due when they change, not because this plan carries less.
  std::map<std::string, double> planned_rates;
  for (const ModelSnapshot& m : snapshot.models) {
    planned_rates[m.config.name()] = m.rate_rps;
  }
  deps_.trigger->SetPlannedRates(std::move(planned_rates));
  {
    absl::MutexLock lock(&mu_);
    plan_ = plan;
    ++stats_.plans;
    stats_.gpulets_started += fresh;
    stats_.calls_handed_over += handed_over;
  }
  // Phase 3: once the retired workers' batches are answered, the backends
  // stop the gpulets the plan dropped.
  DrainRetired(retired);
  const absl::Time drained_at = deps_.clock->Now();
  CommitEverywhere(plan, backends);
  WritePlanFile(plan);
  int gpulets = 0;
  for (const DevicePlan& d : plan.devices()) gpulets += d.gpulets_size();
  spdlog::info(
      "plan epoch {} by '{}' installed ({}): {} device(s), {} gpulet(s), {} "
      "new, {} queued call(s) handed over; plan {} ms, apply {} ms, drain {} "
      "ms, commit {} ms",
      plan.epoch(), plan.policy(), reason, plan.devices_size(), gpulets, fresh,
      handed_over, absl::ToInt64Milliseconds(planned_at - started),
      absl::ToInt64Milliseconds(applied_at - planned_at),
      absl::ToInt64Milliseconds(drained_at - applied_at),
      absl::ToInt64Milliseconds(deps_.clock->Now() - drained_at));
  return absl::OkStatus();
}

absl::StatusOr<Plan> PlanCoordinator::MakePlan(const std::string& reason,
                                               const SchedulingPolicy& policy,
                                               const ClusterSnapshot& snapshot,
                                               const Plan& current,
                                               int* fresh) const {
  // Overloaded (e.g. a backend died): plan for as much of the load as
  // fits rather than keep routing to lost devices.
  ASSIGN_OR_RETURN(
      OverloadPlan overload,
      ScheduleWithOverload(policy, snapshot, options_.config.min_rate_rps()));
  Plan plan = std::move(overload.plan);
  // Why the frontend re-planned, then what the policy says about its plan
  // (e.g. that inss fell back to another policy).
  std::string plan_reason = reason;
  if (!plan.reason().empty())
    absl::StrAppend(&plan_reason, "; ", plan.reason());
  if (overload.scale < 1) {
    plan_reason += absl::StrFormat(
        "; overloaded: planned for %.0f%% of the observed rates",
        100 * overload.scale);
    spdlog::warn(
        "{}: the policy cannot place the observed load; planning for "
        "{:.0f}% of it",
        reason, 100 * overload.scale);
  }
  plan.set_epoch(current.epoch() + 1);
  plan.set_reason(plan_reason);
  *fresh = AssignGpuletIds(current, &plan);
  return plan;
}

void PlanCoordinator::DrainRetired(
    const std::vector<std::shared_ptr<GpuletWorker>>& retired) {
  const absl::Time deadline =
      deps_.clock->Now() + absl::Seconds(options_.config.drain_timeout_s());
  for (const auto& w : retired) {
    if (!w->WaitIdle(
            std::max(absl::ZeroDuration(), deadline - deps_.clock->Now()))) {
      spdlog::warn("retired gpulet {} still has batches in flight after {} s",
                   w->gpulet_id(), options_.config.drain_timeout_s());
      graveyard_.push_back(w);
    }
  }
}

std::vector<std::shared_ptr<GpuletWorker>> PlanCoordinator::MakeWorkers(
    const Plan& plan, const ClusterSnapshot& snapshot,
    const std::map<std::string, GpuletStatus>& statuses,
    const std::map<std::string, BackendControl*>& backends) {
  std::vector<std::shared_ptr<GpuletWorker>> workers;
  for (const DevicePlan& device : plan.devices()) {
    DeviceKind kind = DEVICE_KIND_UNSPECIFIED;
    for (const DeviceSnapshot& d : snapshot.devices) {
      if (d.backend_id == device.backend_id() &&
          d.device_id == device.device_id()) {
        kind = d.kind;
      }
    }
    for (const GpuletPlan& g : device.gpulets()) {
      GpuletWorker::Options wo;
      wo.backend_id = device.backend_id();
      wo.device_id = device.device_id();
      wo.gpulet = g;
      wo.epoch = plan.epoch();
      const int inflight = options_.config.max_inflight_batches_per_gpulet();
      wo.dispatch.max_inflight_batches = inflight > 0 ? inflight : 2;
      wo.dispatch.pass_through = g.scheduler() != GPULET_SCHEDULER_BATCHES;
      // Real round trips can inflate the estimates for a while (a frontend
      // starved of CPU); probing keeps that from expiring every later
      // request (Dispatcher, "Stale estimates").
      wo.dispatch.probe_interval = absl::Milliseconds(100);
      // Full batches under a backlog (Dispatcher, "Backlog").
      wo.dispatch.shed_oldest_in_backlog = true;
      wo.retry = [this](std::unique_ptr<InferCall> call) {
        RetryAfterSwap(std::move(call));
      };
      LatencyEstimator estimator;
      for (const ModelAssignment& a : g.models()) {
        wo.configs[a.model()] = &deps_.repository->Find(a.model())->config;
        for (const ModelSnapshot& m : snapshot.models) {
          auto it = m.profiles.find(ProfileKey(kind));
          if (m.config.name() == a.model() && it != m.profiles.end()) {
            estimator.SeedFromProfile(it->second, g.share_percent());
          }
        }
      }
      // Measured on this very proxy: preferred over profiles.
      auto sit = statuses.find(g.gpulet_id());
      if (sit != statuses.end()) {
        for (const MeasuredLatency& m : sit->second.warmup()) {
          estimator.Seed(
              m.model(), m.batch_size(),
              absl::Microseconds(static_cast<int64_t>(m.latency_ms() * 1000)));
        }
        for (const auto& [model, why] : sit->second.failed_models()) {
          wo.failed_models.insert(model);
        }
      }
      workers.push_back(std::make_shared<GpuletWorker>(
          std::move(wo), backends.at(device.backend_id()), deps_.clock,
          std::move(estimator)));
    }
  }
  return workers;
}

}  // namespace tessera
