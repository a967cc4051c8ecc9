#include "backend/backend_service.h"

#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backend/cpu_partitioner.h"
#include "common/cpu_affinity.h"
#include "common/grpc_status_util.h"
#include "common/status_macros.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

std::vector<std::string> ModelNames(const GpuletPlan& g) {
  std::vector<std::string> names;
  for (const ModelAssignment& a : g.models()) names.push_back(a.model());
  std::sort(names.begin(), names.end());
  return names;
}

// Same process can keep serving: same share and model set.
bool SameProcess(const GpuletPlan& a, const GpuletPlan& b) {
  return a.share_percent() == b.share_percent() &&
         ModelNames(a) == ModelNames(b);
}

}  // namespace

BackendServiceImpl::BackendServiceImpl(Options options,
                                       std::unique_ptr<ModelRepository> repo)
    : options_(std::move(options)), repo_(std::move(repo)) {}

BackendServiceImpl::~BackendServiceImpl() { StopProxies(); }

absl::StatusOr<std::unique_ptr<BackendServiceImpl>> BackendServiceImpl::Create(
    Options options) {
  if (options.config.id().empty()) {
    return absl::InvalidArgumentError("backend config needs an id");
  }
  if (options.config.devices_size() == 0) {
    return absl::InvalidArgumentError("backend config declares no devices");
  }
  auto own = GetCpuAffinity(0);
  std::set<std::string> ids;
  for (DeviceConfig& d : *options.config.mutable_devices()) {
    if (d.id().empty() || !ids.insert(d.id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device id '", d.id(), "' empty or repeated"));
    }
    if (d.kind() != DEVICE_KIND_CPU) {
      return absl::UnimplementedError(absl::StrCat(
          "device '", d.id(), "': kind ", DeviceKind_Name(d.kind()),
          " is not supported by this build yet (cpu only)"));
    }
    if (d.cpu_cores().empty() && own.ok()) {
      for (int c : *own) d.add_cpu_cores(c);
    }
  }
  auto repo = ModelRepository::Load(options.model_repository);
  if (!repo.ok()) return repo.status();
  return std::unique_ptr<BackendServiceImpl>(
      new BackendServiceImpl(std::move(options), std::move(*repo)));
}

const DeviceConfig* BackendServiceImpl::FindDevice(
    const std::string& id) const {
  for (const DeviceConfig& d : options_.config.devices()) {
    if (d.id() == id) return &d;
  }
  return nullptr;
}

grpc::Status BackendServiceImpl::GetNodeInfo(grpc::ServerContext*,
                                             const GetNodeInfoRequest*,
                                             NodeInfo* response) {
  response->set_backend_id(options_.config.id());
  for (const DeviceConfig& d : options_.config.devices()) {
    DeviceInfo* info = response->add_devices();
    info->set_device_id(d.id());
    info->set_kind(d.kind());
    info->set_num_cores(d.cpu_cores_size());
    info->set_memory_bytes(d.memory_bytes());
  }
  return grpc::Status::OK;
}

absl::StatusOr<ApplyPlanResponse> BackendServiceImpl::DoApplyPlan(
    const Plan& plan) {
  // This backend's gpulets in the new plan, with their cores.
  std::map<std::string, Gpulet> wanted;
  for (const DevicePlan& dp : plan.devices()) {
    if (dp.backend_id() != options_.config.id()) continue;
    const DeviceConfig* device = FindDevice(dp.device_id());
    if (device == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          "plan names device '", dp.device_id(), "', which backend '",
          options_.config.id(), "' does not have"));
    }
    std::vector<double> shares;
    for (const GpuletPlan& g : dp.gpulets())
      shares.push_back(g.share_percent());
    std::vector<int> device_cores(device->cpu_cores().begin(),
                                  device->cpu_cores().end());
    ASSIGN_OR_RETURN(auto cores, CpuPartitioner::Assign(device_cores, shares));
    for (int i = 0; i < dp.gpulets_size(); ++i) {
      const GpuletPlan& g = dp.gpulets(i);
      for (const ModelAssignment& a : g.models()) {
        if (repo_->Find(a.model()) == nullptr) {
          return absl::NotFoundError(
              absl::StrCat("gpulet '", g.gpulet_id(), "': model '", a.model(),
                           "' is not in this backend's repository"));
        }
      }
      wanted[g.gpulet_id()] = Gpulet{g, dp.device_id(), cores[i], nullptr};
    }
  }

  // Keep unchanged gpulets; start a shadow proxy for every new or changed
  // one while the current proxies keep serving.
  std::map<std::string, Gpulet> current;
  {
    absl::MutexLock lock(&mu_);
    current = gpulets_;
  }
  std::vector<std::shared_ptr<ProxyHandle>> started;
  for (auto& [id, g] : wanted) {
    auto it = current.find(id);
    if (it != current.end() && SameProcess(it->second.plan, g.plan) &&
        it->second.cores == g.cores && it->second.proxy->alive()) {
      g.proxy = it->second.proxy;
      continue;
    }
    ProxyHandle::Options po;
    po.proxy_binary = options_.proxy_binary;
    po.model_repository = options_.model_repository;
    po.gpulet_id = id;
    po.device_id = g.device_id;
    po.cpu_cores = g.cores;
    po.threads = static_cast<int>(g.cores.size());
    po.num_slots = options_.proxy_slots;
    po.startup_timeout = options_.proxy_startup_timeout;
    for (const std::string& name : ModelNames(g.plan)) {
      po.models.push_back(repo_->Find(name)->config);
    }
    auto proxy = ProxyHandle::Start(po);
    if (!proxy.ok()) {
      for (auto& p : started) p->Stop();
      return proxy.status();
    }
    g.proxy = std::move(*proxy);
    started.push_back(g.proxy);
  }

  // Switch routing, then drain and stop the proxies no longer used.
  std::vector<std::shared_ptr<ProxyHandle>> retired;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, g] : gpulets_) {
      auto it = wanted.find(id);
      if (it == wanted.end() || it->second.proxy != g.proxy) {
        retired.push_back(g.proxy);
      }
    }
    gpulets_ = wanted;
    epoch_ = plan.epoch();
  }
  for (auto& p : retired) {
    if (!p->Drain(options_.drain_timeout)) {
      spdlog::warn("gpulet {} did not drain in time; stopping it",
                   p->options().gpulet_id);
    }
    p->Stop();
  }

  ApplyPlanResponse response;
  for (const auto& [id, g] : wanted) {
    GpuletStatus* s = response.add_gpulets();
    s->set_gpulet_id(id);
    s->set_device_id(g.device_id);
    s->set_pid(g.proxy->pid());
    for (int c : g.cores) s->add_cpu_cores(c);
    for (const MeasuredLatency& m : g.proxy->warmup()) *s->add_warmup() = m;
  }
  spdlog::info("applied plan epoch {}: {} gpulet(s), {} started, {} retired",
               plan.epoch(), wanted.size(), started.size(), retired.size());
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
  *response = std::move(*result);
  return grpc::Status::OK;
}

grpc::Status BackendServiceImpl::Execute(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<BatchResponse, BatchRequest>* stream) {
  // Responses are written from proxy reader threads; writes are serialised
  // and the handler returns only once every batch has been answered.
  struct StreamState {
    absl::Mutex mu;
    int outstanding ABSL_GUARDED_BY(mu) = 0;
    bool broken ABSL_GUARDED_BY(mu) = false;
  };
  auto state = std::make_shared<StreamState>();
  auto reply = [state, stream](BatchResponse response) {
    absl::MutexLock lock(&state->mu);
    if (!state->broken && !stream->Write(response)) state->broken = true;
    --state->outstanding;
  };
  BatchRequest batch;
  while (stream->Read(&batch)) {
    std::shared_ptr<ProxyHandle> proxy;
    {
      absl::MutexLock lock(&mu_);
      auto it = gpulets_.find(batch.gpulet_id());
      if (it != gpulets_.end()) proxy = it->second.proxy;
    }
    {
      absl::MutexLock lock(&state->mu);
      ++state->outstanding;
    }
    if (proxy == nullptr) {
      BatchResponse response;
      response.set_batch_id(batch.batch_id());
      ToStatusProto(
          absl::NotFoundError(absl::StrCat("gpulet '", batch.gpulet_id(),
                                           "' is not served by backend '",
                                           options_.config.id(), "'")),
          response.mutable_status());
      reply(std::move(response));
      continue;
    }
    proxy->Execute(batch, reply);
  }
  absl::MutexLock lock(&state->mu);
  auto done = [state]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu) {
    return state->outstanding == 0;
  };
  state->mu.Await(absl::Condition(&done));
  return grpc::Status::OK;
}

grpc::Status BackendServiceImpl::Health(grpc::ServerContext*,
                                        const HealthRequest*,
                                        HealthResponse* response) {
  absl::MutexLock lock(&mu_);
  bool ready = !gpulets_.empty();
  for (const auto& [id, g] : gpulets_) ready = ready && g.proxy->alive();
  response->set_ready(ready);
  response->set_num_proxies(static_cast<int>(gpulets_.size()));
  return grpc::Status::OK;
}

void BackendServiceImpl::StopProxies() {
  std::map<std::string, Gpulet> gpulets;
  {
    absl::MutexLock lock(&mu_);
    gpulets.swap(gpulets_);
  }
  for (auto& [id, g] : gpulets) g.proxy->Stop();
}

}  // namespace tessera
