#include "backend/backend_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status_util.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace tessera {

BackendServiceImpl::BackendServiceImpl(Options options,
                                       std::unique_ptr<BackendNode> node)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? options_.clock : RealClock::Get()),
      traffic_(clock_),
      node_(std::move(node)),
      starter_(options_.proxies, node_.get(), &metrics_),
      recovery_({options_.supervise_period > absl::ZeroDuration(),
                 options_.restart, options_.parking},
                clock_, &metrics_) {
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
  *response = node_->Describe();
  return grpc::Status::OK;
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

absl::Status BackendServiceImpl::CheckPlanLimits(
    const Plan& plan, const std::map<std::string, GpuletSpec>& wanted) {
  RETURN_IF_ERROR(
      CheckGpuletsPerDevice(wanted, options_.max_gpulets_per_device));
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
  if (!stop_first.empty()) starter_.DrainAndStop(stop_first);
  ASSIGN_OR_RETURN(std::vector<GpuletEntry> serving,
                   starter_.StartAll(diff.start, wanted));
  for (const std::string& id : diff.keep) {
    serving.push_back({wanted.at(id), routable.at(id).proxy});
  }
  std::sort(serving.begin(), serving.end(),
            [](const GpuletEntry& a, const GpuletEntry& b) {
              return a.id() < b.id();
            });
  ApplyPlanResponse response;
  for (const GpuletEntry& g : serving) *response.add_gpulets() = g.ToStatus();
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
  // Models a kept gpulet no longer serves leave its proxy at the commit:
  // until then the frontend's routing (the old plan) may still send them
  // batches. The table already has the smaller gpulet, so a plan that
  // brings them back before the commit starts a new proxy.
  for (const auto& [id, models] : diff.drop) {
    pending_drops_[id].insert(models.begin(), models.end());
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
  if (traffic_.draining()) {
    // The frontend planned before it saw the drain; it plans again
    // without this backend. A plan that leaves it nothing is applied (its
    // gpulets retire as usual).
    auto wanted = node_->Resolve(request->plan());
    if (wanted.ok() && !wanted->empty()) {
      return ToGrpcStatus(absl::FailedPreconditionError(
          "this backend is draining (shutting down): plan without it"));
    }
  }
  auto result = DoApplyPlan(request->plan());
  if (!result.ok()) {
    spdlog::error("ApplyPlan epoch {} failed: {}", request->plan().epoch(),
                  result.status().ToString());
    return ToGrpcStatus(result.status());
  }
  applied_plan_ = request->plan();
  RouteAll(recovery_.PlanApplied());
  *response = std::move(*result);
  return grpc::Status::OK;
}

void BackendServiceImpl::RouteAll(std::vector<ParkedBatches::Entry> batches) {
  for (auto& e : batches) Route(std::move(e.batch), std::move(e.reply));
}

void BackendServiceImpl::HealExitedProxies() {
  absl::MutexLock apply_lock(&apply_mu_);
  if (!applied_plan_.has_value()) return;
  std::vector<std::string> exited;
  {
    absl::MutexLock lock(&mu_);
    exited = table_.Exited();
  }
  const std::vector<std::string> restart = recovery_.Triage(exited);
  if (!restart.empty()) {
    // The plan diff starts a proxy for every gpulet whose proxy is not
    // alive and keeps the others; the exited ones become replaced.
    auto result = DoApplyPlan(*applied_plan_);
    if (!result.ok()) {
      spdlog::error("restarting crashed proxies failed: {}",
                    result.status().ToString());
    }
    RouteAll(recovery_.Release(restart));  // held again where it failed
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
  starter_.DrainAndStop(retired);
  {
    absl::MutexLock lock(&mu_);
    UpdateInterference();
  }
  DropPendingModels();
  for (const GpuletEntry& g : retired) response->add_stopped_gpulets(g.id());
  if (!retired.empty()) {
    spdlog::info("committed plan epoch {}: stopped {} retired gpulet(s)",
                 request->epoch(), retired.size());
  }
  return grpc::Status::OK;
}

void BackendServiceImpl::DropPendingModels() {
  std::map<std::string, std::set<std::string>> pending;
  pending.swap(pending_drops_);
  std::map<std::string, GpuletEntry> routable;
  {
    absl::MutexLock lock(&mu_);
    routable = table_.Routable();
  }
  for (const auto& [id, models] : pending) {
    auto it = routable.find(id);
    if (it == routable.end()) continue;  // retired meanwhile
    const std::vector<std::string> serves = it->second.spec.ModelNames();
    std::vector<std::string> drop;
    for (const std::string& m : models) {
      if (std::find(serves.begin(), serves.end(), m) == serves.end()) {
        drop.push_back(m);
      }
    }
    if (drop.empty()) continue;  // a later plan kept them
    it->second.proxy->DropModels(drop);
    spdlog::info("gpulet {}: dropped {} (unloaded); its proxy serves on", id,
                 absl::StrJoin(drop, ", "));
  }
}

void BackendServiceImpl::Route(BatchRequest batch,
                               std::function<void(BatchResponse)> reply) {
  traffic_.RecordBatch();
  GpuletTable::Route route;
  {
    absl::MutexLock lock(&mu_);
    route = table_.Find(batch.gpulet_id());
    // Its proxy exited and is about to be restarted: hold the batch for
    // the new one.
    if (recovery_.Hold(route, batch, reply)) return;
  }
  if (route.proxy == nullptr) {
    reply(route.Refusal(batch, node_->id()));
    return;
  }
  const std::string gpulet = batch.gpulet_id(), model = batch.model();
  const Proxy* sent_to = route.proxy.get();
  route.proxy->Execute(std::move(batch), [this, gpulet, model, sent_to,
                                          reply = std::move(reply)](
                                             BatchResponse r) {
    // The proxy was stopped for a stop-then-start swap, or exited with the
    // batch in flight and is restarted: say so, so the frontend routes the
    // calls again.
    if (r.status().code() == static_cast<int>(absl::StatusCode::kUnavailable)) {
      absl::MutexLock lock(&mu_);
      const GpuletTable::Route now = table_.Find(gpulet);
      const bool exited = now.proxy != nullptr &&
                          (now.proxy.get() != sent_to || !now.proxy->alive());
      if (now.stopped_for_swap ||
          (exited && recovery_.WillRestart(now, gpulet))) {
        r.set_gpulet_stopped(true);
      }
    }
    metrics_.RecordBatch(gpulet, model, r);
    reply(std::move(r));
  });
}

grpc::Status BackendServiceImpl::Health(grpc::ServerContext*,
                                        const HealthRequest* request,
                                        HealthResponse* response) {
  response->set_ready(Ready());
  response->set_draining(traffic_.draining());
  absl::MutexLock lock(&mu_);
  if (request != nullptr &&
      request->routing() != HealthRequest::ROUTING_UNSPECIFIED) {
    // An UNROUTED plan older than the one applied here says nothing of
    // the newer plan's routing.
    traffic_.RecordHeartbeat(request->routing() ==
                                 HealthRequest::ROUTING_UNROUTED &&
                             request->settled_epoch() >= epoch_);
  }
  for (const auto& [id, g] : table_.Routable()) {
    *response->add_gpulets() = g.ToStatus();
  }
  response->set_num_proxies(table_.num_proxies());
  response->set_epoch(epoch_);
  response->set_swaps(swaps_);
  response->set_stop_then_start_swaps(stop_then_start_swaps_);
  return grpc::Status::OK;
}

bool BackendServiceImpl::Ready() const {
  absl::MutexLock lock(&mu_);
  return table_.Ready();
}

std::string BackendServiceImpl::RenderMetrics() {
  {
    absl::MutexLock lock(&mu_);
    metrics_.SetPlanState(table_, epoch_, swaps_, stop_then_start_swaps_);
  }
  return metrics_.Render();
}

bool BackendServiceImpl::AwaitFrontendLeft(absl::Duration quiet,
                                           absl::Duration silence,
                                           absl::Time deadline) {
  return traffic_.AwaitQuiet(quiet, silence, deadline);
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
  recovery_.Stop();
  for (GpuletEntry& g : all) g.proxy->Stop();
}

}  // namespace tessera
