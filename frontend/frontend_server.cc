#include "frontend/frontend_server.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/grpc_tuning.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "common/thread_name.h"
#include "frontend/admin_service.h"
#include "frontend/cluster_snapshot_builder.h"
#include "grpcpp/grpcpp.h"
#include "perfmodel/interference_model.h"
#include "scheduler/overload_planning.h"
#include "scheduler/plan_ids.h"
#include "scheduler/policy_registry.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

// Calls `call` on every backend of `backends` at once, one thread each
// (joined before returning), and returns the results in the map's order.
// A cluster's plan change then takes as long as its slowest backend, not
// the sum of all.
template <typename Call>
auto OnEveryBackend(const std::map<std::string, BackendClient*>& backends,
                    Call call) {
  using Result = decltype(call(static_cast<BackendClient*>(nullptr)));
  std::vector<std::optional<Result>> results(backends.size());
  std::vector<std::thread> threads;
  size_t i = 0;
  for (const auto& [id, backend] : backends) {
    threads.emplace_back(
        [&results, &call, i, b = backend] { results[i].emplace(call(b)); });
    ++i;
  }
  for (std::thread& t : threads) t.join();
  std::vector<Result> out;
  out.reserve(results.size());
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

// Fills the re-planning defaults documented in config.proto.
absl::Status ApplyDefaults(FrontendConfig* c) {
  if (c->policy().empty()) c->set_policy("static");
  if (c->time_scale() == 0) c->set_time_scale(1);
  if (c->replan_period_s() == 0) c->set_replan_period_s(20);
  if (c->rate_window_s() == 0) c->set_rate_window_s(20);
  if (c->replan_threshold() == 0) c->set_replan_threshold(0.25);
  if (c->min_rate_rps() == 0) c->set_min_rate_rps(1);
  if (c->heartbeat_interval_s() == 0) c->set_heartbeat_interval_s(1);
  if (c->heartbeat_misses() == 0) c->set_heartbeat_misses(3);
  if (c->drain_timeout_s() == 0) c->set_drain_timeout_s(30);
  if (!(c->time_scale() > 0) || !(c->replan_period_s() > 0) ||
      !(c->rate_window_s() > 0) || !(c->replan_threshold() > 0) ||
      c->min_rate_rps() < 0 || !(c->heartbeat_interval_s() > 0) ||
      c->heartbeat_misses() < 1 || !(c->drain_timeout_s() > 0)) {
    return absl::InvalidArgumentError(
        "frontend config: time_scale, replan_period_s, rate_window_s, "
        "replan_threshold, heartbeat_interval_s, heartbeat_misses and "
        "drain_timeout_s must be positive; min_rate_rps >= 0");
  }
  return absl::OkStatus();
}

absl::Duration Seconds(double s) { return absl::Milliseconds(s * 1000); }

std::vector<std::string> BackendIds(const FrontendConfig& config) {
  std::vector<std::string> ids;
  for (const BackendEndpoint& b : config.backends()) ids.push_back(b.id());
  return ids;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FrontendServer>> FrontendServer::Create(
    Options options, const Clock* clock) {
  if (options.config.backends_size() == 0) {
    return absl::InvalidArgumentError("frontend config lists no backends");
  }
  for (const BackendEndpoint& b : options.config.backends()) {
    if (b.id().empty() || b.address().empty()) {
      return absl::InvalidArgumentError(
          "every backend needs an id and an address");
    }
  }
  RETURN_IF_ERROR(ApplyDefaults(&options.config));
  auto repository = ModelRepository::Load(options.model_repository);
  if (!repository.ok()) return repository.status();
  // Emulated clusters run k times slower than the GPU they emulate: so do
  // their SLOs.
  (*repository)->ScaleSlos(options.config.time_scale());
  PolicyOptions policy_options;
  policy_options.static_plan = options.config.static_plan();
  policy_options.standby_shadows = options.config.standby_shadows();
  policy_options.inss_checkpoint = options.config.inss_checkpoint_path();
  policy_options.inss_fallback = options.config.inss_fallback_policy();
  auto rules = ResolvePlanningRules(options.config.rules());
  if (!rules.ok()) return rules.status();
  policy_options.rules = *rules;
  if (!options.config.interference_profile().empty()) {
    InterferenceProfile ip;
    RETURN_IF_ERROR(ReadTextProto(options.config.interference_profile(), &ip));
    if (ip.linear_coefficients_size() != 5) {
      return absl::InvalidArgumentError(
          absl::StrCat(options.config.interference_profile(),
                       ": the linear form needs 5 coefficients"));
    }
    policy_options.interference =
        std::make_shared<LinearInterference>(std::vector<double>(
            ip.linear_coefficients().begin(), ip.linear_coefficients().end()));
  }
  auto policy = PolicyRegistry::Create(options.config.policy(), policy_options);
  if (!policy.ok()) return policy.status();
  return std::unique_ptr<FrontendServer>(
      new FrontendServer(std::move(options), clock, std::move(*repository),
                         std::move(policy_options), std::move(*policy)));
}

FrontendServer::FrontendServer(Options options, const Clock* clock,
                               std::unique_ptr<ModelRepository> repository,
                               PolicyOptions policy_options,
                               std::unique_ptr<SchedulingPolicy> policy)
    : options_(std::move(options)),
      clock_(clock),
      repository_(std::move(repository)),
      policy_options_(std::move(policy_options)),
      policy_(std::move(policy)),
      monitor_(
          RequestMonitor::Options{Seconds(options_.config.rate_window_s()), 20},
          clock_),
      router_(&monitor_),
      trigger_(ReplanTrigger::Options{options_.config.replan_threshold(),
                                      options_.config.min_rate_rps(),
                                      options_.config.rate_window_s(),
                                      options_.config.heartbeat_misses()},
               BackendIds(options_.config)),
      service_(repository_.get(), &router_, clock_, "0.1.0", &metrics_, this,
               options_.repository_token) {}

FrontendServer::~FrontendServer() { Shutdown(); }

absl::Status FrontendServer::Start() {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options_.listen, grpc::InsecureServerCredentials(),
                           &port_);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(-1);
  ApplyTransportTuning(&builder);
  builder.RegisterService(&async_);
  for (int i = 0; i < std::max(1, options_.event_loops); ++i) {
    cqs_.push_back(builder.AddCompletionQueue());
  }
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    for (auto& cq : cqs_) {
      cq->Shutdown();
      RunCompletionQueue(cq.get());  // drains it
    }
    cqs_.clear();
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options_.listen));
  }
  for (const BackendEndpoint& b : options_.config.backends()) {
    backends_.push_back(std::make_unique<BackendClient>(
        b.id(), b.address(), cqs_[backends_.size() % cqs_.size()].get()));
  }
  for (size_t i = 0; i < cqs_.size(); ++i) {
    grpc::ServerCompletionQueue* cq = cqs_[i].get();
    service_.Arm(&async_, cq, &calls_);
    loops_.emplace_back([cq, i, poll = options_.poll] {
      NameThisThread(absl::StrCat("fe-loop-", i));
      RunCompletionQueue(cq, poll);
    });
  }
  spdlog::info(
      "frontend listening on port {} (policy '{}', time scale {}, re-plan "
      "check every {} s, event loops poll {} us, {}% idle)",
      port_, options_.config.policy(), options_.config.time_scale(),
      options_.config.replan_period_s(),
      absl::ToInt64Microseconds(options_.poll.window),
      options_.poll.idle_budget * 100);
  if (options_.http_port >= 0) {
    const std::string host =
        options_.listen.substr(0, options_.listen.rfind(':'));
    auto http = HttpEndpoint::Start(
        host, options_.http_port,
        {[this] { return RenderMetrics(); }, [this] { return Ready(); }});
    if (!http.ok()) return http.status();
    http_ = std::move(*http);
    spdlog::info("frontend metrics and health on HTTP port {}", http_->port());
  }
  if (!options_.admin_listen.empty()) {
    admin_service_ = std::make_unique<AdminServiceImpl>(this);
    grpc::ServerBuilder admin;
    admin.AddListeningPort(options_.admin_listen,
                           grpc::InsecureServerCredentials(), &admin_port_);
    admin.RegisterService(admin_service_.get());
    // A queue nobody polls makes this a "hybrid" server: gRPC then gives
    // its synchronous handler threads queues that do not poll either, and
    // the admin port's events are polled by the event loop, the only
    // thread of the frontend that waits in gRPC's poller. That needs one
    // epoll set for the process; with another poller the admin server
    // keeps a polling thread of its own.
    if (GrpcPollsOneEpollSet()) admin_unpolled_cq_ = admin.AddCompletionQueue();
    admin_server_ = admin.BuildAndStart();
    if (admin_server_ == nullptr || admin_port_ == 0) {
      return absl::UnavailableError(absl::StrCat(
          "cannot listen for admin RPCs on ", options_.admin_listen));
    }
    spdlog::info("frontend admin service on port {}", admin_port_);
  }
  trigger_.Request("initial plan");
  planner_ = std::thread([this] { PlannerLoop(); });
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  return absl::OkStatus();
}

absl::Status FrontendServer::SetPolicy(const std::string& name) {
  auto policy = PolicyRegistry::Create(name, policy_options_);
  if (!policy.ok()) return policy.status();
  {
    absl::MutexLock lock(&mu_);
    policy_ = std::move(*policy);
  }
  trigger_.Override("policy switched to '" + name + "'");
  spdlog::info("scheduling policy switched to '{}'", name);
  return absl::OkStatus();
}

AdminStatus FrontendServer::Status() const {
  AdminStatus status;
  {
    absl::MutexLock lock(&mu_);
    status.set_policy(policy_->name());
    *status.mutable_plan() = plan_;
    status.set_plans_installed(stats_.plans);
    status.set_plan_failures(stats_.plan_failures);
  }
  for (const auto& [m, r] : trigger_.PlannedRates()) {
    (*status.mutable_planned_rates_rps())[m] = r;
  }
  for (const auto& [id, up] : trigger_.AliveBackends()) {
    (*status.mutable_backends_up())[id] = up;
  }
  for (const auto& [m, r] : monitor_.Rates()) {
    (*status.mutable_observed_rates_rps())[m] = r;
  }
  for (const auto& w : router_.workers()) {
    if (w->on_standby()) status.add_gpulets_on_standby(w->gpulet_id());
  }
  return status;
}

void FrontendServer::RequestReplan(const std::string& reason) {
  trigger_.Request(reason);
}

void FrontendServer::PlannerLoop() {
  const absl::Duration period = Seconds(options_.config.replan_period_s());
  absl::Time next_check = clock_->Now() + period;
  int failures = 0;
  absl::Time last_log = absl::InfinitePast();
  std::string last_error;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (trigger_.Pending().empty() && clock_->Now() >= next_check) {
      next_check = clock_->Now() + period;
      trigger_.CheckRates(monitor_.Rates(), monitor_.Coverage());
    }
    const std::string reason = trigger_.Pending();
    if (reason.empty()) {
      trigger_.WaitForRequest(
          std::max(absl::Milliseconds(10), next_check - clock_->Now()));
      continue;
    }
    absl::Status status = PlanAndApply(reason);
    trigger_.Finished(reason, status.ok());
    if (status.ok()) {
      failures = 0;
      continue;
    }
    ++failures;
    // The first failure, a different failure, then at most one line
    // every 30 s.
    if (clock_->Now() - last_log >= absl::Seconds(30) ||
        status.ToString() != last_error) {
      last_error = status.ToString();
      spdlog::warn(
          "planning ({}) failed ({} attempt(s) so far), retrying every {}: {}",
          reason, failures, absl::FormatDuration(options_.plan_retry_interval),
          status.ToString());
      last_log = clock_->Now();
    }
    absl::MutexLock lock(&mu_);
    ++stats_.plan_failures;
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&stopping),
                         options_.plan_retry_interval);
  }
}

void FrontendServer::HeartbeatLoop() {
  const absl::Duration interval =
      Seconds(options_.config.heartbeat_interval_s());
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_;
      };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping), interval)) return;
    }
    CheckStandbys();
    for (auto& backend : backends_) {
      auto health = backend->Health(interval);
      int64_t plan_epoch = 0;  // none to compare while a plan is applied
      {
        absl::MutexLock lock(&mu_);
        if (!planning_) plan_epoch = plan_.epoch();
      }
      trigger_.OnHeartbeat(backend->id(), health.status(),
                           health.ok() ? health->epoch() : 0, plan_epoch);
    }
  }
}

void FrontendServer::CheckStandbys() {
  constexpr int64_t kMinAnswered = 20;
  for (const auto& w : router_.workers()) {
    if (w->options().gpulet.standby_share_percent() <= 0 || w->on_standby()) {
      continue;
    }
    const GpuletWorker::Window window = w->TakeWindow(kMinAnswered);
    if (window.answered < kMinAnswered ||
        window.late * 100 <= window.answered) {
      continue;
    }
    if (!w->SwitchToStandby()) continue;
    spdlog::warn(
        "gpulet {}: {} of {} calls missed their SLO since the last check: "
        "switched to its standby proxy ({}% share)",
        w->gpulet_id(), window.late, window.answered,
        w->options().gpulet.standby_share_percent());
    absl::MutexLock lock(&mu_);
    ++stats_.standby_switches;
  }
}

void FrontendServer::Reroute(std::unique_ptr<InferCall> call) {
  absl::Status routed = router_.Reroute(call);
  if (!routed.ok()) FinishCall(std::move(call), routed);
}

void FrontendServer::RetryAfterSwap(std::unique_ptr<InferCall> call) {
  {
    absl::MutexLock lock(&mu_);
    if (parking_) {
      parked_.push_back(std::move(call));
      return;
    }
  }
  Reroute(std::move(call));
}

void FrontendServer::ReleaseParked() {
  std::vector<std::unique_ptr<InferCall>> parked;
  {
    absl::MutexLock lock(&mu_);
    parking_ = false;
    parked.swap(parked_);
  }
  for (auto& call : parked) Reroute(std::move(call));
}

absl::Status FrontendServer::PlanAndApply(const std::string& reason) {
  struct PlanningFlag {
    FrontendServer* self;
    explicit PlanningFlag(FrontendServer* s) : self(s) {
      absl::MutexLock lock(&self->mu_);
      self->planning_ = true;
      self->parking_ = true;
    }
    ~PlanningFlag() {
      {
        absl::MutexLock lock(&self->mu_);
        self->planning_ = false;
      }
      self->ReleaseParked();  // a failed plan change routes them back
    }
  } planning_flag(this);

  const absl::Time planning_started = absl::Now();
  std::map<std::string, BackendClient*> backend_by_id;
  std::vector<NodeInfo> nodes;
  for (auto& backend : backends_) {
    if (!trigger_.Alive(backend->id())) continue;
    auto info = backend->GetNodeInfo(absl::Seconds(5));
    if (!info.ok()) {
      return absl::UnavailableError(
          absl::StrCat("backend '", backend->id(), "' at ", backend->address(),
                       ": ", info.status().message()));
    }
    if (info->backend_id() != backend->id()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "backend at ", backend->address(), " says its id is '",
          info->backend_id(), "', config says '", backend->id(), "'"));
    }
    for (const DeviceInfo& d : info->devices()) {
      if (d.kind() == DEVICE_KIND_EMULATED &&
          std::abs(d.time_scale() - options_.config.time_scale()) > 1e-9) {
        return absl::FailedPreconditionError(absl::StrCat(
            "backend '", backend->id(), "' device '", d.device_id(),
            "' runs at time scale ", d.time_scale(),
            "; this frontend's time_scale is ", options_.config.time_scale()));
      }
    }
    backend_by_id[backend->id()] = backend.get();
    nodes.push_back(std::move(*info));
  }
  if (nodes.empty()) {
    return absl::UnavailableError("no backend is alive");
  }
  Plan current;
  const std::set<std::string> unloaded = unloaded_.All();
  // The policy in force when planning starts: SetPolicy may replace
  // policy_ meanwhile, and this plan then finishes with the one it began
  // with (SetPolicy asks for another plan).
  std::shared_ptr<const SchedulingPolicy> policy;
  {
    absl::MutexLock lock(&mu_);
    current = plan_;
    policy = policy_;
  }
  ClusterSnapshot snapshot = BuildClusterSnapshot(
      nodes, *repository_, options_.config.profile_dir(), current,
      clock_->Now(), options_.config.time_scale());
  snapshot.models.erase(
      std::remove_if(snapshot.models.begin(), snapshot.models.end(),
                     [&](const ModelSnapshot& m) {
                       return unloaded.count(m.config.name()) > 0;
                     }),
      snapshot.models.end());
  const std::map<std::string, double> observed = monitor_.Rates();
  std::map<std::string, double> planned_rates;
  for (ModelSnapshot& m : snapshot.models) {
    auto it = observed.find(m.config.name());
    m.rate_rps = std::max(options_.config.min_rate_rps(),
                          it == observed.end() ? 0.0 : it->second);
    planned_rates[m.config.name()] = m.rate_rps;
  }
  // Overloaded (e.g. a backend died): plan for as much of the load as
  // fits rather than keep routing to lost devices.
  auto overload =
      ScheduleWithOverload(*policy, snapshot, options_.config.min_rate_rps());
  if (!overload.ok()) return overload.status();
  Plan plan = std::move(overload->plan);
  // Why the frontend re-planned, then what the policy says about its plan
  // (e.g. that inss fell back to another policy).
  std::string plan_reason = reason;
  if (!plan.reason().empty())
    absl::StrAppend(&plan_reason, "; ", plan.reason());
  if (overload->scale < 1) {
    plan_reason += absl::StrFormat(
        "; overloaded: planned for %.0f%% of the observed rates",
        100 * overload->scale);
    spdlog::warn(
        "{}: the policy cannot place the observed load; planning "
        "for {:.0f}% of it",
        reason, 100 * overload->scale);
    // planned_rates keeps the observed rates: re-planning is due when they
    // change, not because this plan carries less.
  }
  const absl::Time planned_at = absl::Now();
  plan.set_epoch(current.epoch() + 1);
  plan.set_reason(plan_reason);
  const int fresh = AssignGpuletIds(current, &plan);

  // Phase 1: every live backend starts its new gpulets (old ones keep
  // serving), all backends at once. On failure, those that accepted go
  // back to the current plan.
  const std::vector<absl::StatusOr<ApplyPlanResponse>> applied =
      OnEveryBackend(backend_by_id, [&](BackendClient* b) {
        return b->ApplyPlan(plan, options_.backend_call_timeout);
      });
  std::map<std::string, GpuletStatus> statuses;
  std::map<std::string, BackendClient*> applied_on;
  absl::Status rejected;
  auto result = applied.begin();
  for (const auto& [id, backend] : backend_by_id) {
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
  if (!rejected.ok()) {
    OnEveryBackend(applied_on, [&](BackendClient* b) {
      if (b->ApplyPlan(current, options_.backend_call_timeout).ok()) {
        (void)b->CommitPlan(current.epoch(), options_.backend_call_timeout);
      }
      return 0;
    });
    return rejected;
  }

  const absl::Time applied_at = absl::Now();
  // Phase 2: switch routing; queued calls of the retired workers move to
  // the new ones, and calls still routed to them are forwarded.
  std::vector<std::shared_ptr<GpuletWorker>> retired =
      router_.Install(MakeWorkers(plan, snapshot, statuses, backend_by_id));
  int64_t handed_over = 0;
  for (auto& w : retired) {
    auto queued = w->Retire(
        [this](std::unique_ptr<InferCall> call) { Reroute(std::move(call)); });
    handed_over += static_cast<int64_t>(queued.size());
    for (auto& call : queued) Reroute(std::move(call));
  }
  // Calls that met a gpulet stopped for a stop-then-start swap go to the
  // new plan's gpulets.
  ReleaseParked();
  {
    absl::MutexLock lock(&mu_);
    plan_ = plan;
    trigger_.SetPlannedRates(planned_rates);
    ++stats_.plans;
    stats_.gpulets_started += fresh;
    stats_.calls_handed_over += handed_over;
  }

  // Phase 3: once the retired workers' batches are answered, the backends
  // stop the gpulets the plan dropped.
  const absl::Time drain_deadline =
      absl::Now() + Seconds(options_.config.drain_timeout_s());
  for (auto& w : retired) {
    if (!w->WaitIdle(
            std::max(absl::ZeroDuration(), drain_deadline - absl::Now()))) {
      spdlog::warn("retired gpulet {} still has batches in flight after {} s",
                   w->gpulet_id(), options_.config.drain_timeout_s());
      graveyard_.push_back(w);
    }
  }
  const absl::Time drained_at = absl::Now();
  const std::vector<absl::Status> committed =
      OnEveryBackend(backend_by_id, [&](BackendClient* b) {
        return b->CommitPlan(plan.epoch(), options_.backend_call_timeout);
      });
  auto commit = committed.begin();
  for (const auto& [id, backend] : backend_by_id) {
    const absl::Status& c = *commit++;
    if (!c.ok()) {
      spdlog::warn("backend '{}' did not commit plan epoch {}: {}", id,
                   plan.epoch(), c.ToString());
    }
  }
  if (!options_.plan_file.empty()) {
    absl::Status written = WriteTextProto(options_.plan_file + ".tmp", plan);
    if (written.ok()) {
      std::filesystem::rename(options_.plan_file + ".tmp", options_.plan_file);
    } else {
      spdlog::warn("cannot write the plan to {}: {}", options_.plan_file,
                   written.ToString());
    }
  }
  int gpulets = 0;
  for (const DevicePlan& d : plan.devices()) gpulets += d.gpulets_size();
  spdlog::info(
      "plan epoch {} by '{}' installed ({}): {} device(s), {} gpulet(s), {} "
      "new, {} queued call(s) handed over; plan {} ms, apply {} ms, drain {} "
      "ms, commit {} ms",
      plan.epoch(), plan.policy(), reason, plan.devices_size(), gpulets, fresh,
      handed_over, absl::ToInt64Milliseconds(planned_at - planning_started),
      absl::ToInt64Milliseconds(applied_at - planned_at),
      absl::ToInt64Milliseconds(drained_at - applied_at),
      absl::ToInt64Milliseconds(absl::Now() - drained_at));
  return absl::OkStatus();
}

std::vector<std::shared_ptr<GpuletWorker>> FrontendServer::MakeWorkers(
    const Plan& plan, const ClusterSnapshot& snapshot,
    const std::map<std::string, GpuletStatus>& statuses,
    const std::map<std::string, BackendClient*>& backend_by_id) {
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
      wo.retry = [this](std::unique_ptr<InferCall> call) {
        RetryAfterSwap(std::move(call));
      };
      LatencyEstimator estimator;
      for (const ModelAssignment& a : g.models()) {
        const ModelRepository::Entry* entry = repository_->Find(a.model());
        wo.configs[a.model()] = &entry->config;
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
      }
      workers.push_back(std::make_shared<GpuletWorker>(
          std::move(wo), backend_by_id.at(device.backend_id()), clock_,
          std::move(estimator)));
    }
  }
  return workers;
}

bool FrontendServer::WaitUntilReady(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return plan_.epoch() > 0 || stopping_;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout) &&
         plan_.epoch() > 0;
}

Plan FrontendServer::current_plan() const {
  absl::MutexLock lock(&mu_);
  return plan_;
}

int FrontendServer::http_port() const {
  return http_ == nullptr ? 0 : http_->port();
}

bool FrontendServer::Ready() const {
  {
    absl::MutexLock lock(&mu_);
    if (plan_.epoch() == 0) return false;
  }
  for (const auto& [id, up] : trigger_.AliveBackends()) {
    if (!up) return false;
  }
  return true;
}

std::string FrontendServer::RenderMetrics() {
  Plan plan;
  Stats stats;
  const std::map<std::string, bool> alive = trigger_.AliveBackends();
  {
    absl::MutexLock lock(&mu_);
    plan = plan_;
    stats = stats_;
  }
  metrics_.plan_epoch()->Set({}, static_cast<double>(plan.epoch()));
  metrics_.plans()->Set({}, static_cast<double>(stats.plans));
  metrics_.gpulets_started()->Set({},
                                  static_cast<double>(stats.gpulets_started));
  metrics_.handed_over()->Set({}, static_cast<double>(stats.calls_handed_over));
  metrics_.standby_switches()->Set({},
                                   static_cast<double>(stats.standby_switches));
  metrics_.gpulet_share()->Clear();
  for (const DevicePlan& d : plan.devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      metrics_.gpulet_share()->Set(
          {d.backend_id(), d.device_id(), g.gpulet_id()}, g.share_percent());
    }
  }
  metrics_.queue_depth()->Clear();
  for (const auto& w : router_.workers()) {
    metrics_.queue_depth()->Set({w->gpulet_id()},
                                static_cast<double>(w->queued()));
  }
  for (const auto& [model, rate] : monitor_.Rates()) {
    metrics_.observed_rate()->Set({model}, rate);
  }
  for (const auto& [id, up] : alive) {
    metrics_.backend_up()->Set({id}, up ? 1 : 0);
  }
  return metrics_.registry().Render();
}

FrontendServer::Stats FrontendServer::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

absl::Status FrontendServer::UnloadModel(const std::string& name,
                                         absl::Time deadline) {
  return SetLoaded(name, false, deadline);
}

absl::Status FrontendServer::LoadModel(const std::string& name,
                                       absl::Time deadline) {
  return SetLoaded(name, true, deadline);
}

bool FrontendServer::IsUnloaded(const std::string& name) const {
  return unloaded_.Contains(name);
}

absl::Status FrontendServer::SetLoaded(const std::string& name, bool loaded,
                                       absl::Time deadline) {
  if (repository_->Find(name) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no model '", name, "' in the model repository"));
  }
  const std::string reason =
      absl::StrCat("model '", name, loaded ? "' loaded" : "' unloaded");
  unloaded_.Set(name, !loaded);
  spdlog::info("{} through the repository API", reason);
  // Ask for a plan until one honours the change: a plan already being made
  // when the change came may not.
  absl::Time ask = absl::InfinitePast();
  while (true) {
    Plan plan;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::UnavailableError("the frontend is stopping");
      plan = plan_;
    }
    if (plan.epoch() > 0 && PlanServes(plan, name) == loaded) {
      return absl::OkStatus();
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          reason, ", but no plan ", loaded ? "serving" : "without",
          " it came in time; the request stands for the next plan"));
    }
    if (now >= ask) {
      RequestReplan(reason);
      ask = now + absl::Seconds(1);
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

void FrontendServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  trigger_.Stop();
  if (planner_.joinable()) planner_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
  http_.reset();
  // Stop dispatching (queued and newly arriving calls get UNAVAILABLE),
  // let in-flight batches finish, stop the gRPC server, close the backend
  // streams (anything still in flight fails), and only then drop the
  // workers their callbacks point to.
  auto workers = router_.workers();
  for (auto& w : workers) w->Stop();
  for (auto& w : workers) w->WaitIdle(absl::Seconds(5));
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  }
  if (admin_server_ != nullptr) {
    admin_server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
  }
  if (admin_unpolled_cq_ != nullptr) {
    admin_unpolled_cq_->Shutdown();
    RunCompletionQueue(admin_unpolled_cq_.get());  // drains it
  }
  for (auto& b : backends_) b->Shutdown();
  router_.Install({});
  graveyard_.clear();
  if (loops_.empty()) return;
  // Every call answered (repository calls wait for their plan at most until
  // their deadline) before the queues shut down under them.
  int left = 0;
  if (!calls_.AwaitNone(absl::Seconds(30), &left)) {
    spdlog::error(
        "{} gRPC call(s) still open 30 s after shutdown; leaving "
        "them",
        left);
    for (auto& loop : loops_) loop.detach();
    for (auto& cq : cqs_) (void)cq.release();
    (void)server_.release();
    return;
  }
  for (auto& cq : cqs_) cq->Shutdown();
  for (auto& loop : loops_) loop.join();
}

}  // namespace tessera
