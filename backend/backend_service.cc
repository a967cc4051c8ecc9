#include "backend/backend_service.h"

#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backend/cpu_partitioner.h"
#include "common/cpu_affinity.h"
#include "common/grpc_status_util.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
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

constexpr char kStandbySuffix[] = "/standby";

}  // namespace

BackendServiceImpl::BackendServiceImpl(
    Options options, std::unique_ptr<ModelRepository> repo,
    std::map<std::string, LatencyModel> emulated_latency,
    std::unique_ptr<InterferenceModel> interference)
    : options_(std::move(options)),
      repo_(std::move(repo)),
      emulated_latency_(std::move(emulated_latency)),
      interference_(std::move(interference)),
      mps_(options_.mps) {
  batches_metric_ =
      metrics_.AddCounter("tessera_backend_batches_total",
                          "Batches answered, by gpulet, model and status code.",
                          {"gpulet", "model", "code"});
  exec_metric_ =
      metrics_.AddHistogram("tessera_backend_batch_exec_seconds",
                            "Execution time of a batch in its proxy.",
                            {"model"}, MetricsRegistry::LatencyBuckets());
  busy_metric_ = metrics_.AddCounter(
      "tessera_backend_gpulet_busy_seconds_total",
      "Time each gpulet's proxy spent executing (rate() = busy fraction).",
      {"gpulet"});
  share_metric_ = metrics_.AddGauge(
      "tessera_backend_gpulet_share_percent",
      "Share of each live gpulet (retiring=1 while it only drains).",
      {"gpulet", "device", "retiring"});
  epoch_metric_ = metrics_.AddGauge("tessera_backend_plan_epoch",
                                    "Epoch of the last plan applied.", {});
  swaps_metric_ = metrics_.AddGauge(
      "tessera_backend_swaps",
      "Proxies started by plan changes since start, by kind.", {"kind"});
}

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
  std::set<int> gpus;
  bool any_emulated = false;
  for (DeviceConfig& d : *options.config.mutable_devices()) {
    if (d.id().empty() || !ids.insert(d.id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device id '", d.id(), "' empty or repeated"));
    }
    if (d.kind() == DEVICE_KIND_EMULATED) {
      any_emulated = true;
      if (d.time_scale() == 0) d.set_time_scale(1);
      if (!(d.time_scale() > 0) || d.noise_cv() < 0 || d.memory_bytes() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "device '", d.id(),
            "': time_scale must be > 0, noise_cv and memory_bytes >= 0"));
      }
      continue;
    }
    if (d.kind() == DEVICE_KIND_CUDA) {
      if (d.gpu_index() < 0 || !gpus.insert(d.gpu_index()).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("device '", d.id(), "': gpu_index ", d.gpu_index(),
                         " negative or used by another device"));
      }
      continue;
    }
    if (d.kind() != DEVICE_KIND_CPU) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", d.id(), "': kind ", DeviceKind_Name(d.kind()),
          " is not a device kind (cpu, cuda, emulated)"));
    }
    if (d.cpu_cores().empty() && own.ok()) {
      for (int c : *own) d.add_cpu_cores(c);
    }
  }
  auto repo = ModelRepository::Load(options.model_repository);
  if (!repo.ok()) return repo.status();

  // Emulated devices run on profiles: load them (and the interference
  // profile, when there is one) once, here.
  std::map<std::string, LatencyModel> latency;
  std::unique_ptr<InterferenceModel> interference =
      std::make_unique<NoInterference>();
  if (any_emulated) {
    if (options.config.profile_dir().empty()) {
      return absl::InvalidArgumentError(
          "emulated devices need the config's profile_dir");
    }
    const std::string dir = options.config.profile_dir() + "/emulated/";
    for (const std::string& name : (*repo)->ModelNames()) {
      ModelProfile profile;
      if (ReadTextProto(dir + name + ".pbtxt", &profile).ok()) {
        auto model = LatencyModel::FromProfile(profile);
        if (!model.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(dir, name, ".pbtxt: ", model.status().message()));
        }
        latency.emplace(name, std::move(*model));
      }
    }
    if (latency.empty()) {
      return absl::NotFoundError(
          absl::StrCat("emulated devices: no profile in ", dir,
                       " for any model of the repository"));
    }
    InterferenceProfile ip;
    if (ReadTextProto(dir + "interference.pbtxt", &ip).ok()) {
      if (ip.linear_coefficients_size() != 5) {
        return absl::InvalidArgumentError(
            absl::StrCat(dir, "interference.pbtxt: needs 5 coefficients"));
      }
      interference = std::make_unique<LinearInterference>(std::vector<double>(
          ip.linear_coefficients().begin(), ip.linear_coefficients().end()));
    }
    spdlog::info("emulated devices: {} model profile(s), interference '{}'",
                 latency.size(), interference->name());
  }
  return std::unique_ptr<BackendServiceImpl>(
      new BackendServiceImpl(std::move(options), std::move(*repo),
                             std::move(latency), std::move(interference)));
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
    if (d.kind() == DEVICE_KIND_EMULATED) info->set_time_scale(d.time_scale());
  }
  return grpc::Status::OK;
}

int64_t BackendServiceImpl::MemoryBytes(const Gpulet& g) const {
  int64_t bytes = 0;
  for (const ModelAssignment& a : g.plan.models()) {
    auto it = emulated_latency_.find(a.model());
    if (it != emulated_latency_.end()) bytes += it->second.memory_bytes();
  }
  return bytes;
}

absl::StatusOr<std::shared_ptr<ProxyHandle>> BackendServiceImpl::StartProxy(
    const Gpulet& g) const {
  const DeviceConfig* device = FindDevice(g.device_id);
  ProxyHandle::Options po;
  po.proxy_binary = options_.proxy_binary;
  po.model_repository = options_.model_repository;
  po.gpulet_id = g.plan.gpulet_id();
  po.device_id = g.device_id;
  po.num_slots = options_.proxy_slots;
  if (device->kind() != DEVICE_KIND_EMULATED) po.poll = options_.proxy_poll;
  po.startup_timeout = options_.proxy_startup_timeout;
  if (device->kind() == DEVICE_KIND_EMULATED) {
    po.device_kind = "emulated";
    po.proxy_binary = options_.emulated_proxy_binary.empty()
                          ? options_.proxy_binary
                          : options_.emulated_proxy_binary;
    po.share_percent = g.plan.share_percent();
    po.profile_dir = options_.config.profile_dir();
    po.time_scale = device->time_scale();
    po.noise_cv = device->noise_cv();
  } else if (device->kind() == DEVICE_KIND_CUDA) {
    // The share is the proxy's own MPS active-thread percentage, fixed for
    // its life: a new share is a new process.
    RETURN_IF_ERROR(mps_.Ensure(device->gpu_index()));
    po.device_kind = "cuda";
    po.extra_env = mps_.ProxyEnv(device->gpu_index(), g.plan.share_percent());
    po.threads = 1;
  } else {
    po.cpu_cores = g.cores;
    po.threads = static_cast<int>(g.cores.size());
  }
  for (const std::string& name : ModelNames(g.plan)) {
    po.models.push_back(repo_->Find(name)->config);
  }
  auto proxy = ProxyHandle::Start(po);
  if (!proxy.ok()) return proxy.status();
  return std::shared_ptr<ProxyHandle>(std::move(*proxy));
}

void BackendServiceImpl::DrainAndStop(
    const std::vector<Gpulet>& gpulets) const {
  // Drain all first (they finish in parallel), then stop.
  const absl::Time deadline = absl::Now() + options_.drain_timeout;
  for (const Gpulet& g : gpulets) {
    if (!g.proxy->Drain(
            std::max(absl::ZeroDuration(), deadline - absl::Now()))) {
      spdlog::warn("gpulet {} did not drain in time; stopping it",
                   g.plan.gpulet_id());
    }
  }
  for (const Gpulet& g : gpulets) g.proxy->Stop();
}

void BackendServiceImpl::UpdateInterference() {
  // Residents per emulated device: every live proxy, retiring ones too
  // (they still run batches).
  std::map<std::string, std::vector<const Gpulet*>> by_device;
  for (const auto& [id, g] : gpulets_) by_device[g.device_id].push_back(&g);
  for (const Gpulet& g : replaced_) by_device[g.device_id].push_back(&g);
  for (auto& [device_id, residents] : by_device) {
    const DeviceConfig* device = FindDevice(device_id);
    if (device == nullptr || device->kind() != DEVICE_KIND_EMULATED) continue;
    auto placement = [this](const Gpulet& g, const ModelAssignment& a) {
      Placement p;
      auto it = emulated_latency_.find(a.model());
      p.model = it == emulated_latency_.end() ? nullptr : &it->second;
      p.batch = std::max(1, a.batch_size());
      p.share_percent = g.plan.share_percent();
      return p;
    };
    for (const Gpulet* self : residents) {
      std::map<std::string, double> factors;
      for (const ModelAssignment& a : self->plan.models()) {
        const Placement me = placement(*self, a);
        double factor = 1;
        for (const Gpulet* other : residents) {
          if (other == self || me.model == nullptr) continue;
          for (const ModelAssignment& b : other->plan.models()) {
            const Placement them = placement(*other, b);
            if (them.model == nullptr) continue;
            // gpulet's rule: the slowest neighbour dominates.
            factor = std::max(factor, interference_->Factor(me, them));
          }
        }
        factors[a.model()] = factor;
      }
      self->proxy->SetInterferenceFactors(std::move(factors));
    }
  }
}

GpuletStatus BackendServiceImpl::StatusOf(const std::string& id,
                                          const Gpulet& g) const {
  GpuletStatus s;
  s.set_gpulet_id(id);
  s.set_device_id(g.device_id);
  s.set_pid(g.proxy->pid());
  for (int c : g.cores) s.add_cpu_cores(c);
  for (const MeasuredLatency& m : g.proxy->warmup()) *s.add_warmup() = m;
  s.set_share_percent(g.plan.share_percent());
  for (const std::string& m : ModelNames(g.plan)) s.add_models(m);
  s.set_retiring(g.retiring);
  return s;
}

absl::StatusOr<ApplyPlanResponse> BackendServiceImpl::DoApplyPlan(
    const Plan& plan) {
  // This backend's gpulets in the new plan, with their cores.
  std::map<std::string, Gpulet> wanted;
  std::map<std::string, int64_t> wanted_memory;  // by device
  for (const DevicePlan& dp : plan.devices()) {
    if (dp.backend_id() != options_.config.id()) continue;
    const DeviceConfig* device = FindDevice(dp.device_id());
    if (device == nullptr) {
      return absl::NotFoundError(absl::StrCat(
          "plan names device '", dp.device_id(), "', which backend '",
          options_.config.id(), "' does not have"));
    }
    const bool emulated = device->kind() == DEVICE_KIND_EMULATED;
    std::vector<double> shares;
    for (const GpuletPlan& g : dp.gpulets())
      shares.push_back(g.share_percent());
    std::vector<std::vector<int>> cores(dp.gpulets_size());
    if (device->kind() == DEVICE_KIND_CPU) {
      std::vector<int> device_cores(device->cpu_cores().begin(),
                                    device->cpu_cores().end());
      ASSIGN_OR_RETURN(cores, CpuPartitioner::Assign(device_cores, shares));
    } else {
      double total = 0;
      for (double sh : shares) total += sh;
      if (total > 100 + 1e-6) {
        return absl::InvalidArgumentError(absl::StrCat(
            "device '", dp.device_id(), "': shares sum to ", total, "% > 100"));
      }
    }
    for (int i = 0; i < dp.gpulets_size(); ++i) {
      const GpuletPlan& g = dp.gpulets(i);
      if (!(g.share_percent() > 0 && g.share_percent() <= 100)) {
        return absl::InvalidArgumentError(
            absl::StrCat("gpulet '", g.gpulet_id(), "': share ",
                         g.share_percent(), "% not in (0, 100]"));
      }
      for (const ModelAssignment& a : g.models()) {
        const ModelRepository::Entry* entry = repo_->Find(a.model());
        if (entry == nullptr) {
          return absl::NotFoundError(
              absl::StrCat("gpulet '", g.gpulet_id(), "': model '", a.model(),
                           "' is not in this backend's repository"));
        }
        if (emulated && !emulated_latency_.count(a.model())) {
          return absl::NotFoundError(absl::StrCat(
              "gpulet '", g.gpulet_id(), "': no emulated profile for model '",
              a.model(), "' in ", options_.config.profile_dir()));
        }
        if (!emulated && entry->config.platform() != "torchscript") {
          return absl::InvalidArgumentError(
              absl::StrCat("gpulet '", g.gpulet_id(), "': model '", a.model(),
                           "' (platform ", entry->config.platform(),
                           ") runs only on emulated devices"));
        }
      }
      if (g.standby_share_percent() < 0 || g.standby_share_percent() > 100) {
        return absl::InvalidArgumentError(
            absl::StrCat("gpulet '", g.gpulet_id(), "': standby share ",
                         g.standby_share_percent(), "% not in [0, 100]"));
      }
      Gpulet gpulet{g, dp.device_id(), cores[i], nullptr};
      wanted_memory[dp.device_id()] += MemoryBytes(gpulet);
      wanted[g.gpulet_id()] = std::move(gpulet);
      if (g.standby_share_percent() > 0) {
        // The shadow: same models, its own share, same cores on a cpu
        // device; warm but idle until the frontend switches to it.
        GpuletPlan standby = g;
        standby.set_gpulet_id(g.gpulet_id() + kStandbySuffix);
        standby.set_share_percent(g.standby_share_percent());
        standby.set_standby_share_percent(0);
        Gpulet shadow{standby, dp.device_id(), cores[i], nullptr};
        wanted_memory[dp.device_id()] += MemoryBytes(shadow);
        wanted[standby.gpulet_id()] = std::move(shadow);
      }
    }
  }
  for (const auto& [device_id, bytes] : wanted_memory) {
    const int64_t capacity = FindDevice(device_id)->memory_bytes();
    if (capacity > 0 && bytes > capacity) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "device '", device_id, "': the plan's models need ", bytes >> 20,
          " MiB, the device has ", capacity >> 20, " MiB"));
    }
  }

  // Keep unchanged gpulets; everything else needs a new (shadow) proxy.
  std::map<std::string, Gpulet> current;
  std::vector<Gpulet> replaced;
  {
    absl::MutexLock lock(&mu_);
    current = gpulets_;
    replaced = replaced_;
  }
  std::vector<std::string> to_start;
  std::map<std::string, int64_t> resident_memory;  // by device, now
  for (const auto& [id, g] : current) {
    resident_memory[g.device_id] += MemoryBytes(g);
  }
  for (const Gpulet& g : replaced)
    resident_memory[g.device_id] += MemoryBytes(g);
  std::map<std::string, int64_t> new_memory;
  for (auto& [id, g] : wanted) {
    auto it = current.find(id);
    if (it != current.end() && SameProcess(it->second.plan, g.plan) &&
        it->second.device_id == g.device_id && it->second.cores == g.cores &&
        it->second.proxy->alive()) {
      g.proxy = it->second.proxy;
      continue;
    }
    to_start.push_back(id);
    new_memory[g.device_id] += MemoryBytes(g);
  }

  // Devices whose memory cannot hold old and new proxies at once: stop the
  // old ones there first (they still finish what they were sent).
  std::vector<Gpulet> stop_first;
  int stop_then_start = 0;
  for (const auto& [device_id, bytes] : new_memory) {
    const int64_t capacity = FindDevice(device_id)->memory_bytes();
    if (capacity <= 0 || resident_memory[device_id] + bytes <= capacity) {
      continue;
    }
    spdlog::warn(
        "device {}: {} MiB resident + {} MiB for shadow proxies exceeds {} "
        "MiB: stop-then-start swap",
        device_id, resident_memory[device_id] >> 20, bytes >> 20,
        capacity >> 20);
    absl::MutexLock lock(&mu_);
    for (auto it = gpulets_.begin(); it != gpulets_.end();) {
      auto w = wanted.find(it->first);
      const bool kept =
          w != wanted.end() && w->second.proxy == it->second.proxy;
      if (it->second.device_id == device_id && !kept) {
        stopped_for_swap_.insert(it->first);
        stop_first.push_back(it->second);
        it = gpulets_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = replaced_.begin(); it != replaced_.end();) {
      if (it->device_id == device_id) {
        stop_first.push_back(*it);
        it = replaced_.erase(it);
      } else {
        ++it;
      }
    }
    for (const std::string& id : to_start) {
      stop_then_start += wanted[id].device_id == device_id;
    }
  }
  if (!stop_first.empty()) DrainAndStop(stop_first);

  // Start the new proxies in parallel: each loads and warms up on its own.
  std::vector<absl::StatusOr<std::shared_ptr<ProxyHandle>>> results(
      to_start.size(), absl::UnknownError("not started"));
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < to_start.size(); ++i) {
      threads.emplace_back([this, &results, &wanted, &to_start, i] {
        results[i] = StartProxy(wanted[to_start[i]]);
      });
    }
    for (auto& t : threads) t.join();
  }
  absl::Status failed;
  for (size_t i = 0; i < to_start.size(); ++i) {
    if (results[i].ok()) {
      wanted[to_start[i]].proxy = *results[i];
    } else if (failed.ok()) {
      failed = results[i].status();
    }
  }
  if (!failed.ok()) {
    for (auto& r : results) {
      if (r.ok()) (*r)->Stop();
    }
    return failed;
  }

  // Switch: the plan's gpulets are routable; the others retire.
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, g] : gpulets_) {
      auto it = wanted.find(id);
      if (it == wanted.end()) {
        g.retiring = true;
      } else if (it->second.proxy != g.proxy) {
        g.retiring = true;
        replaced_.push_back(g);
      }
    }
    for (auto it = gpulets_.begin(); it != gpulets_.end();) {
      if (wanted.count(it->first)) {
        it = gpulets_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [id, g] : wanted) gpulets_[id] = g;
    epoch_ = plan.epoch();
    swaps_ += static_cast<int64_t>(to_start.size());
    stop_then_start_swaps_ += stop_then_start;
    UpdateInterference();
  }

  ApplyPlanResponse response;
  for (const auto& [id, g] : wanted) *response.add_gpulets() = StatusOf(id, g);
  response.set_started(static_cast<int>(to_start.size()));
  response.set_stop_then_start(stop_then_start);
  spdlog::info(
      "applied plan epoch {}: {} gpulet(s), {} started ({} stop-then-start)",
      plan.epoch(), wanted.size(), to_start.size(), stop_then_start);
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

grpc::Status BackendServiceImpl::CommitPlan(grpc::ServerContext*,
                                            const CommitPlanRequest* request,
                                            CommitPlanResponse* response) {
  absl::MutexLock apply_lock(&apply_mu_);
  std::vector<Gpulet> retired;
  {
    absl::MutexLock lock(&mu_);
    if (request->epoch() != epoch_) {
      return ToGrpcStatus(absl::FailedPreconditionError(
          absl::StrCat("cannot commit plan epoch ", request->epoch(),
                       ": the plan in force is epoch ", epoch_)));
    }
    for (auto it = gpulets_.begin(); it != gpulets_.end();) {
      if (it->second.retiring) {
        retired.push_back(it->second);
        it = gpulets_.erase(it);
      } else {
        ++it;
      }
    }
    for (Gpulet& g : replaced_) retired.push_back(std::move(g));
    replaced_.clear();
    stopped_for_swap_.clear();
  }
  DrainAndStop(retired);
  {
    absl::MutexLock lock(&mu_);
    UpdateInterference();
  }
  for (const Gpulet& g : retired) {
    response->add_stopped_gpulets(g.plan.gpulet_id());
  }
  if (!retired.empty()) {
    spdlog::info("committed plan epoch {}: stopped {} retired gpulet(s)",
                 request->epoch(), retired.size());
  }
  return grpc::Status::OK;
}

void BackendServiceImpl::Route(BatchRequest batch,
                               std::function<void(BatchResponse)> reply) {
  std::shared_ptr<ProxyHandle> proxy;
  bool stopped_for_swap = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = gpulets_.find(batch.gpulet_id());
    if (it != gpulets_.end()) proxy = it->second.proxy;
    stopped_for_swap = stopped_for_swap_.count(batch.gpulet_id()) > 0;
  }
  if (proxy == nullptr) {
    BatchResponse response;
    response.set_batch_id(batch.batch_id());
    response.set_gpulet_stopped(stopped_for_swap);
    ToStatusProto(
        stopped_for_swap
            ? absl::UnavailableError(absl::StrCat(
                  "gpulet '", batch.gpulet_id(),
                  "' was stopped for a stop-then-start swap (device "
                  "memory too small for a shadow proxy); retry"))
            : absl::NotFoundError(absl::StrCat("gpulet '", batch.gpulet_id(),
                                               "' is not served by backend '",
                                               options_.config.id(), "'")),
        response.mutable_status());
    reply(std::move(response));
    return;
  }
  const std::string gpulet = batch.gpulet_id(), model = batch.model();
  proxy->Execute(std::move(batch), [this, gpulet, model,
                                    reply = std::move(reply)](BatchResponse r) {
    // The proxy was taken just before a stop-then-start swap stopped it:
    // say so, so the frontend routes the calls again.
    if (r.status().code() == static_cast<int>(absl::StatusCode::kUnavailable)) {
      absl::MutexLock lock(&mu_);
      if (stopped_for_swap_.count(gpulet) > 0) r.set_gpulet_stopped(true);
    }
    batches_metric_->Increment(
        {gpulet, model,
         absl::StatusCodeToString(
             static_cast<absl::StatusCode>(r.status().code()))});
    if (r.status().code() == 0) {
      const double exec = r.exec_time_us() / 1e6;
      exec_metric_->Observe({model}, exec);
      busy_metric_->Increment({gpulet}, exec);
    }
    reply(std::move(r));
  });
}

grpc::Status BackendServiceImpl::Health(grpc::ServerContext*,
                                        const HealthRequest*,
                                        HealthResponse* response) {
  response->set_ready(Ready());
  absl::MutexLock lock(&mu_);
  for (const auto& [id, g] : gpulets_) {
    *response->add_gpulets() = StatusOf(id, g);
  }
  response->set_num_proxies(
      static_cast<int>(gpulets_.size() + replaced_.size()));
  response->set_epoch(epoch_);
  response->set_swaps(swaps_);
  response->set_stop_then_start_swaps(stop_then_start_swaps_);
  return grpc::Status::OK;
}

bool BackendServiceImpl::Ready() const {
  absl::MutexLock lock(&mu_);
  bool ready = !gpulets_.empty();
  for (const auto& [id, g] : gpulets_) {
    ready = ready && (g.retiring || g.proxy->alive());
  }
  return ready;
}

std::string BackendServiceImpl::RenderMetrics() {
  {
    absl::MutexLock lock(&mu_);
    share_metric_->Clear();
    for (const auto& [id, g] : gpulets_) {
      share_metric_->Set({id, g.device_id, g.retiring ? "1" : "0"},
                         g.plan.share_percent());
    }
    epoch_metric_->Set({}, static_cast<double>(epoch_));
    swaps_metric_->Set({"shadow"},
                       static_cast<double>(swaps_ - stop_then_start_swaps_));
    swaps_metric_->Set({"stop_then_start"},
                       static_cast<double>(stop_then_start_swaps_));
  }
  return metrics_.Render();
}

void BackendServiceImpl::StopProxies() {
  std::map<std::string, Gpulet> gpulets;
  std::vector<Gpulet> replaced;
  {
    absl::MutexLock lock(&mu_);
    gpulets.swap(gpulets_);
    replaced.swap(replaced_);
  }
  for (auto& [id, g] : gpulets) g.proxy->Stop();
  for (auto& g : replaced) g.proxy->Stop();
}

}  // namespace tessera
