#include "backend/backend_service.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backend/overlap_proxy.h"
#include "common/grpc_status_util.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace tessera {

BackendServiceImpl::BackendServiceImpl(Options options,
                                       std::unique_ptr<BackendNode> node)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock::Get()),
      node_(std::move(node)),
      launcher_(options_.launcher),
      mps_(options_.mps),
      restarts_(options_.restart) {
  if (launcher_ == nullptr)
    launcher_ = std::make_shared<ProcessProxyLauncher>();
  if (options_.supervise_period > absl::ZeroDuration()) {
    supervisor_ = std::make_unique<ProxySupervisor>(
        options_.supervise_period, [this] { HealExitedProxies(); });
  }
}

BackendServiceImpl::~BackendServiceImpl() { StopProxies(); }

absl::StatusOr<std::unique_ptr<BackendServiceImpl>> BackendServiceImpl::Create(
    Options options) {
  ASSIGN_OR_RETURN(std::unique_ptr<BackendNode> node,
                   BackendNode::Load(options.config, options.model_repository));
  return std::unique_ptr<BackendServiceImpl>(
      new BackendServiceImpl(std::move(options), std::move(node)));
}

grpc::Status BackendServiceImpl::GetNodeInfo(grpc::ServerContext*,
                                             const GetNodeInfoRequest*,
                                             NodeInfo* response) {
  response->set_backend_id(node_->id());
  for (const DeviceConfig& d : node_->config().devices()) {
    DeviceInfo* info = response->add_devices();
    info->set_device_id(d.id());
    info->set_kind(d.kind());
    info->set_num_cores(d.cpu_cores_size());
    info->set_memory_bytes(d.memory_bytes());
    if (d.kind() == DEVICE_KIND_EMULATED) info->set_time_scale(d.time_scale());
  }
  return grpc::Status::OK;
}

absl::StatusOr<std::shared_ptr<Proxy>> BackendServiceImpl::StartProxy(
    const GpuletSpec& g) const {
  const DeviceConfig* device = node_->FindDevice(g.device_id);
  ProxyHandle::Options po;
  po.proxy_binary = options_.proxy_binary;
  po.num_slots = options_.proxy_slots;
  po.startup_timeout = options_.proxy_startup_timeout;
  po.config =
      node_->ProxyConfigFor(g, options_.model_repository, options_.proxy_poll);
  if (device->kind() == DEVICE_KIND_EMULATED &&
      !options_.emulated_proxy_binary.empty()) {
    po.proxy_binary = options_.emulated_proxy_binary;
  }
  if (device->kind() == DEVICE_KIND_EMULATED) {
    po.config.mutable_emulated()->set_a100_ground_truth_dir(
        node_->config().a100_ground_truth_dir());
  }
  if (device->kind() == DEVICE_KIND_CUDA) {
    // The share is the proxy's own MPS active-thread percentage, fixed for
    // its life: a new share is a new process.
    RETURN_IF_ERROR(mps_.Ensure(device->gpu_index()));
    po.extra_env = mps_.ProxyEnv(device->gpu_index(), g.plan.share_percent());
  }
  if (g.plan.scheduler() == GPULET_SCHEDULER_BATCHES) {
    return launcher_->Launch(po);
  }
  return StartOverlapProxy(g, po);
}

absl::StatusOr<std::shared_ptr<Proxy>> BackendServiceImpl::StartOverlapProxy(
    const GpuletSpec& g, const ProxyHandle::Options& po) const {
  if (options_.group_predictor == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("gpulet '", g.plan.gpulet_id(), "' runs operator groups (",
                     GpuletScheduler_Name(g.plan.scheduler()),
                     ") but this backend has no --group_predictor"));
  }
  OverlapProxy::Options oo;
  switch (g.plan.scheduler()) {
    case GPULET_SCHEDULER_FCFS:
      oo.queues.scheduler = OverlapScheduler::kFcfs;
      break;
    case GPULET_SCHEDULER_SJF:
      oo.queues.scheduler = OverlapScheduler::kSjf;
      break;
    case GPULET_SCHEDULER_EDF:
      oo.queues.scheduler = OverlapScheduler::kEdf;
      break;
    default:
      oo.queues.scheduler = OverlapScheduler::kAbacus;
  }
  const DeviceConfig* device = node_->FindDevice(g.device_id);
  if (device->kind() == DEVICE_KIND_EMULATED && device->time_scale() > 0) {
    oo.time_scale = device->time_scale();
  }
  oo.models.assign(po.config.models().begin(), po.config.models().end());
  oo.on_group = [this, id = g.plan.gpulet_id()](int size, double us) {
    metrics_.RecordGroup(id, size, us / 1e6);
  };
  ProxyHandle::Options groups = po;
  groups.config.set_operator_groups(true);
  ASSIGN_OR_RETURN(std::shared_ptr<Proxy> inner, launcher_->Launch(groups));
  auto wrapped = OverlapProxy::Create(inner, *options_.group_predictor,
                                      std::move(oo), RealClock::Get());
  if (!wrapped.ok()) {
    inner->Stop();
    return wrapped.status();
  }
  return std::shared_ptr<Proxy>(std::move(*wrapped));
}

absl::StatusOr<std::vector<GpuletEntry>> BackendServiceImpl::StartAll(
    const std::vector<std::string>& ids,
    const std::map<std::string, GpuletSpec>& wanted) const {
  std::vector<absl::StatusOr<std::shared_ptr<Proxy>>> results(
      ids.size(), absl::UnknownError("not started"));
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < ids.size(); ++i) {
      threads.emplace_back([this, &results, &wanted, &ids, i] {
        results[i] = StartProxy(wanted.at(ids[i]));
      });
    }
    for (auto& t : threads) t.join();
  }
  std::vector<GpuletEntry> started;
  absl::Status failed;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (results[i].ok()) {
      started.push_back({wanted.at(ids[i]), *results[i]});
    } else if (failed.ok()) {
      failed = results[i].status();
    }
  }
  if (!failed.ok()) {
    for (GpuletEntry& g : started) g.proxy->Stop();
    return failed;
  }
  return started;
}

void BackendServiceImpl::DrainAndStop(
    const std::vector<GpuletEntry>& gpulets) const {
  // Drain all first (they finish in parallel), then stop.
  const absl::Time deadline = absl::Now() + options_.drain_timeout;
  for (const GpuletEntry& g : gpulets) {
    if (!g.proxy->Drain(
            std::max(absl::ZeroDuration(), deadline - absl::Now()))) {
      spdlog::warn("gpulet {} did not drain in time; stopping it", g.id());
    }
  }
  for (const GpuletEntry& g : gpulets) g.proxy->Stop();
}

void BackendServiceImpl::UpdateInterference() {
  // Every live proxy counts, retiring ones too (they still run batches).
  const std::vector<GpuletEntry> live = table_.Live();
  auto factors = node_->InterferenceFactors(live);
  for (size_t i = 0; i < live.size(); ++i) {
    if (factors[i])
      live[i].proxy->SetInterferenceFactors(std::move(*factors[i]));
  }
}

GpuletStatus BackendServiceImpl::StatusOf(const GpuletEntry& g) {
  GpuletStatus s;
  s.set_gpulet_id(g.id());
  s.set_device_id(g.spec.device_id);
  s.set_pid(g.proxy->pid());
  for (int c : g.spec.cores) s.add_cpu_cores(c);
  for (const MeasuredLatency& m : g.proxy->warmup()) *s.add_warmup() = m;
  s.set_share_percent(g.spec.plan.share_percent());
  for (const std::string& m : g.spec.ModelNames()) s.add_models(m);
  s.set_retiring(g.state == GpuletState::kRetiring);
  *s.mutable_proxy_config() = g.proxy->config();
  for (const auto& [model, why] : g.proxy->failed_models()) {
    ToStatusProto(why, &(*s.mutable_failed_models())[model]);
  }
  return s;
}

absl::Status BackendServiceImpl::CheckPlanLimits(
    const Plan& plan, const std::map<std::string, GpuletSpec>& wanted) {
  std::map<std::string, int> per_device;
  for (const auto& [id, spec] : wanted) {
    if (++per_device[spec.device_id] > options_.max_gpulets_per_device) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the plan asks for more than ", options_.max_gpulets_per_device,
          " proxy processes on device '", spec.device_id,
          "' (--max_gpulets_per_device)"));
    }
  }
  if (wanted.empty()) {
    absl::MutexLock lock(&mu_);
    if (!table_.Residents().empty()) {
      spdlog::warn("plan epoch {} stops every gpulet of this backend",
                   plan.epoch());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ApplyPlanResponse> BackendServiceImpl::DoApplyPlan(
    const Plan& plan) {
  ASSIGN_OR_RETURN(const auto wanted, node_->Resolve(plan));
  RETURN_IF_ERROR(CheckPlanLimits(plan, wanted));
  std::map<std::string, GpuletEntry> routable;
  PlanDiff diff;
  {
    absl::MutexLock lock(&mu_);
    routable = table_.Routable();
    diff = DiffPlan(table_.Residents(), wanted, node_->MemoryCapacities());
  }
  // Devices whose memory cannot hold old and new proxies at once: stop the
  // old ones there first (they still finish what they were sent).
  std::vector<GpuletEntry> stop_first;
  for (const std::string& device_id : diff.stop_first_devices) {
    spdlog::warn(
        "device {}: resident and shadow proxies exceed its memory: "
        "stop-then-start swap",
        device_id);
    absl::MutexLock lock(&mu_);
    for (GpuletEntry& g : table_.TakeForStopFirst(device_id, diff.keep)) {
      stop_first.push_back(std::move(g));
    }
  }
  if (!stop_first.empty()) DrainAndStop(stop_first);
  ASSIGN_OR_RETURN(std::vector<GpuletEntry> serving,
                   StartAll(diff.start, wanted));
  for (const std::string& id : diff.keep) {
    serving.push_back({wanted.at(id), routable.at(id).proxy});
  }
  std::sort(serving.begin(), serving.end(),
            [](const GpuletEntry& a, const GpuletEntry& b) {
              return a.id() < b.id();
            });
  ApplyPlanResponse response;
  for (const GpuletEntry& g : serving) *response.add_gpulets() = StatusOf(g);
  response.set_started(static_cast<int>(diff.start.size()));
  response.set_stop_then_start(diff.stop_then_start);
  {
    // Switch: the plan's gpulets are routable; the others retire.
    absl::MutexLock lock(&mu_);
    table_.Switch(std::move(serving));
    epoch_ = plan.epoch();
    swaps_ += static_cast<int64_t>(diff.start.size());
    stop_then_start_swaps_ += diff.stop_then_start;
    UpdateInterference();
  }
  // Unloaded models leave their proxies only now that the plan is in the
  // table: a plan that failed to apply left them loaded, and a plan that
  // brings them back sees the smaller gpulet and starts a new proxy.
  for (const auto& [id, models] : diff.drop) {
    routable.at(id).proxy->DropModels(models);
    spdlog::info("gpulet {}: dropped {} (unloaded); its proxy serves on", id,
                 absl::StrJoin(models, ", "));
  }
  spdlog::info(
      "applied plan epoch {}: {} gpulet(s), {} started ({} stop-then-start)",
      plan.epoch(), wanted.size(), diff.start.size(), diff.stop_then_start);
  return response;
}

grpc::Status BackendServiceImpl::ApplyPlan(grpc::ServerContext*,
                                           const ApplyPlanRequest* request,
                                           ApplyPlanResponse* response) {
  absl::MutexLock lock(&apply_mu_);
  auto result = DoApplyPlan(request->plan());
  if (!result.ok()) {
    spdlog::error("ApplyPlan epoch {} failed: {}", request->plan().epoch(),
                  result.status().ToString());
    return ToGrpcStatus(result.status());
  }
  applied_plan_ = request->plan();
  restarts_.Reset();
  given_up_.clear();
  *response = std::move(*result);
  return grpc::Status::OK;
}

void BackendServiceImpl::HealExitedProxies() {
  absl::MutexLock apply_lock(&apply_mu_);
  if (!applied_plan_.has_value()) return;
  std::vector<std::string> exited;
  {
    absl::MutexLock lock(&mu_);
    for (const ResidentGpulet& r : table_.Residents()) {
      if (r.state == GpuletState::kServing && !r.alive) {
        exited.push_back(r.spec.id());
      }
    }
  }
  bool restart = false;
  for (const std::string& id : exited) {
    switch (restarts_.Check(id, clock_->Now())) {
      case RestartBudget::Verdict::kRestart:
        spdlog::warn("gpulet {}: its proxy exited; restarting it", id);
        metrics_.RecordProxyExit(id, "restarted");
        restart = true;
        break;
      case RestartBudget::Verdict::kGiveUp:
        if (given_up_.insert(id).second) {
          spdlog::error(
              "gpulet {}: its proxy keeps exiting ({} restarts within the "
              "budget's window); leaving it down until the next plan",
              id, restarts_.RecentRestarts(id, clock_->Now()));
          metrics_.RecordProxyExit(id, "given_up");
        }
        break;
      case RestartBudget::Verdict::kWait:
        break;
    }
  }
  if (restart) {
    // The plan diff starts a proxy for every gpulet whose proxy is not
    // alive and keeps the others; the exited ones become replaced.
    auto result = DoApplyPlan(*applied_plan_);
    if (!result.ok()) {
      spdlog::error("restarting crashed proxies failed: {}",
                    result.status().ToString());
    }
  }
  std::vector<GpuletEntry> dead;
  {
    absl::MutexLock lock(&mu_);
    dead = table_.TakeDeadReplaced();
  }
  for (GpuletEntry& g : dead) g.proxy->Stop();  // reaps the process
}

grpc::Status BackendServiceImpl::CommitPlan(grpc::ServerContext*,
                                            const CommitPlanRequest* request,
                                            CommitPlanResponse* response) {
  absl::MutexLock apply_lock(&apply_mu_);
  std::vector<GpuletEntry> retired;
  {
    absl::MutexLock lock(&mu_);
    if (request->epoch() != epoch_) {
      return ToGrpcStatus(absl::FailedPreconditionError(
          absl::StrCat("cannot commit plan epoch ", request->epoch(),
                       ": the plan in force is epoch ", epoch_)));
    }
    retired = table_.TakeRetired();
  }
  DrainAndStop(retired);
  {
    absl::MutexLock lock(&mu_);
    UpdateInterference();
  }
  for (const GpuletEntry& g : retired) response->add_stopped_gpulets(g.id());
  if (!retired.empty()) {
    spdlog::info("committed plan epoch {}: stopped {} retired gpulet(s)",
                 request->epoch(), retired.size());
  }
  return grpc::Status::OK;
}

void BackendServiceImpl::Route(BatchRequest batch,
                               std::function<void(BatchResponse)> reply) {
  last_batch_unix_us_.store(absl::ToUnixMicros(clock_->Now()),
                            std::memory_order_relaxed);
  GpuletTable::Route route;
  {
    absl::MutexLock lock(&mu_);
    route = table_.Find(batch.gpulet_id());
  }
  const bool stopped_for_swap = route.stopped_for_swap;
  if (route.proxy == nullptr) {
    BatchResponse response;
    response.set_batch_id(batch.batch_id());
    response.set_gpulet_stopped(stopped_for_swap);
    ToStatusProto(
        stopped_for_swap
            ? absl::UnavailableError(absl::StrCat(
                  "gpulet '", batch.gpulet_id(),
                  "' was stopped for a stop-then-start swap (device "
                  "memory too small for a shadow proxy); retry"))
            // Transient for the client: the frontend's plan
            // still names a gpulet this backend no longer (or
            // not yet) serves, e.g. after its restart.
            : absl::UnavailableError(absl::StrCat(
                  "gpulet '", batch.gpulet_id(), "' is not served by backend '",
                  node_->id(), "' (restarted, or the plan moved it); retry")),
        response.mutable_status());
    reply(std::move(response));
    return;
  }
  const std::string gpulet = batch.gpulet_id(), model = batch.model();
  route.proxy->Execute(std::move(batch), [this, gpulet, model,
                                          reply = std::move(reply)](
                                             BatchResponse r) {
    // The proxy was taken just before a stop-then-start swap stopped it:
    // say so, so the frontend routes the calls again.
    if (r.status().code() == static_cast<int>(absl::StatusCode::kUnavailable)) {
      absl::MutexLock lock(&mu_);
      if (table_.Find(gpulet).stopped_for_swap) r.set_gpulet_stopped(true);
    }
    metrics_.RecordBatch(gpulet, model, r);
    reply(std::move(r));
  });
}

grpc::Status BackendServiceImpl::Health(grpc::ServerContext*,
                                        const HealthRequest*,
                                        HealthResponse* response) {
  response->set_ready(Ready());
  response->set_draining(draining_.load());
  absl::MutexLock lock(&mu_);
  for (const auto& [id, g] : table_.Routable()) {
    *response->add_gpulets() = StatusOf(g);
  }
  response->set_num_proxies(table_.num_proxies());
  response->set_epoch(epoch_);
  response->set_swaps(swaps_);
  response->set_stop_then_start_swaps(stop_then_start_swaps_);
  return grpc::Status::OK;
}

bool BackendServiceImpl::Ready() const {
  absl::MutexLock lock(&mu_);
  const auto routable = table_.Routable();
  bool ready = !routable.empty();
  for (const auto& [id, g] : routable) {
    ready = ready && (g.state == GpuletState::kRetiring || g.proxy->alive());
  }
  return ready;
}

std::string BackendServiceImpl::RenderMetrics() {
  {
    absl::MutexLock lock(&mu_);
    metrics_.SetPlanState(table_, epoch_, swaps_, stop_then_start_swaps_);
  }
  return metrics_.Render();
}

bool BackendServiceImpl::AwaitFrontendLeft(absl::Duration quiet,
                                           absl::Time deadline) {
  draining_.store(true);
  const absl::Time since = clock_->Now();
  while (clock_->Now() < deadline) {
    const absl::Time last = std::max(
        since, absl::FromUnixMicros(
                   last_batch_unix_us_.load(std::memory_order_relaxed)));
    if (clock_->Now() - last >= quiet) return true;
    absl::SleepFor(std::min(absl::Milliseconds(50), quiet / 4));
  }
  return false;
}

void BackendServiceImpl::DrainProxies(absl::Duration timeout) {
  if (supervisor_ != nullptr) supervisor_->Stop();
  std::vector<GpuletEntry> live;
  {
    absl::MutexLock lock(&mu_);
    live = table_.Live();
  }
  const absl::Time until = clock_->Now() + timeout;
  for (const GpuletEntry& g : live) {
    if (!g.proxy->Drain(
            std::max(absl::ZeroDuration(), until - clock_->Now()))) {
      spdlog::warn("gpulet {}: batches still in flight after the drain",
                   g.id());
    }
  }
}

void BackendServiceImpl::StopProxies() {
  if (supervisor_ != nullptr) supervisor_->Stop();
  std::vector<GpuletEntry> all;
  {
    absl::MutexLock lock(&mu_);
    all = table_.TakeAll();
  }
  for (GpuletEntry& g : all) g.proxy->Stop();
}

}  // namespace tessera
