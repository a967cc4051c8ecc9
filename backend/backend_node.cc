#include "backend/backend_node.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "backend/cpu_partitioner.h"
#include "backend/proxy_handle.h"
#include "common/cpu_affinity.h"
#include "common/gpulet_id.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

// Validates the devices in place; true if any is emulated.
absl::StatusOr<bool> ValidateDevices(BackendConfig* config) {
  if (config->id().empty()) {
    return absl::InvalidArgumentError("backend config needs an id");
  }
  if (config->devices_size() == 0) {
    return absl::InvalidArgumentError("backend config declares no devices");
  }
  auto own = GetCpuAffinity(0);
  std::set<std::string> ids;
  std::set<int> gpus;
  bool any_emulated = false;
  for (DeviceConfig& d : *config->mutable_devices()) {
    if (d.id().empty() || !ids.insert(d.id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device id '", d.id(), "' empty or repeated"));
    }
    switch (d.kind()) {
      case DEVICE_KIND_EMULATED:
        any_emulated = true;
        if (d.time_scale() == 0) d.set_time_scale(1);
        if (!(d.time_scale() > 0) || d.noise_cv() < 0 || d.memory_bytes() < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "device '", d.id(),
              "': time_scale must be > 0, noise_cv and memory_bytes >= 0"));
        }
        break;
      case DEVICE_KIND_CUDA:
        if (d.gpu_index() < 0 || !gpus.insert(d.gpu_index()).second) {
          return absl::InvalidArgumentError(
              absl::StrCat("device '", d.id(), "': gpu_index ", d.gpu_index(),
                           " negative or used by another device"));
        }
        break;
      case DEVICE_KIND_CPU:
        if (d.cpu_cores().empty() && own.ok()) {
          for (int c : *own) d.add_cpu_cores(c);
        }
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            "device '", d.id(), "': kind ", DeviceKind_Name(d.kind()),
            " is not a device kind (cpu, cuda, emulated)"));
    }
  }
  return any_emulated;
}

struct EmulatedProfiles {
  std::map<std::string, LatencyModel> latency;
  std::unique_ptr<InterferenceModel> interference;
};

// The profiles of the repository's models under `profile_dir`/emulated,
// and its interference profile when there is one.
absl::StatusOr<EmulatedProfiles> LoadEmulatedProfiles(
    const std::string& profile_dir, const ModelRepository& repo) {
  if (profile_dir.empty()) {
    return absl::InvalidArgumentError(
        "emulated devices need the config's profile_dir");
  }
  EmulatedProfiles profiles;
  profiles.interference = std::make_unique<NoInterference>();
  const std::string dir = profile_dir + "/emulated/";
  for (const std::string& name : repo.ModelNames()) {
    ModelProfile profile;
    if (!ReadTextProto(dir + name + ".pbtxt", &profile).ok()) continue;
    auto model = LatencyModel::FromProfile(profile);
    if (!model.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir, name, ".pbtxt: ", model.status().message()));
    }
    profiles.latency.emplace(name, std::move(*model));
  }
  if (profiles.latency.empty()) {
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
    profiles.interference =
        std::make_unique<LinearInterference>(std::vector<double>(
            ip.linear_coefficients().begin(), ip.linear_coefficients().end()));
  }
  spdlog::info("emulated devices: {} model profile(s), interference '{}'",
               profiles.latency.size(), profiles.interference->name());
  return profiles;
}

}  // namespace

BackendNode::BackendNode(BackendConfig config,
                         std::unique_ptr<ModelRepository> repo,
                         std::map<std::string, LatencyModel> emulated_latency,
                         std::unique_ptr<InterferenceModel> interference)
    : config_(std::move(config)),
      repo_(std::move(repo)),
      emulated_latency_(std::move(emulated_latency)),
      interference_(std::move(interference)) {}

absl::StatusOr<std::unique_ptr<BackendNode>> BackendNode::Load(
    BackendConfig config, const std::string& model_repository) {
  ASSIGN_OR_RETURN(const bool any_emulated, ValidateDevices(&config));
  ASSIGN_OR_RETURN(
      std::unique_ptr<ModelRepository> repo,
      ModelRepository::Load(model_repository,
                            ModelRepository::InvalidEntries::kSkip));
  EmulatedProfiles profiles;
  profiles.interference = std::make_unique<NoInterference>();
  if (any_emulated && config.a100_ground_truth_dir().empty()) {
    ASSIGN_OR_RETURN(profiles,
                     LoadEmulatedProfiles(config.profile_dir(), *repo));
  }
  return std::unique_ptr<BackendNode>(new BackendNode(
      std::move(config), std::move(repo), std::move(profiles.latency),
      std::move(profiles.interference)));
}

const DeviceConfig* BackendNode::FindDevice(const std::string& id) const {
  for (const DeviceConfig& d : config_.devices()) {
    if (d.id() == id) return &d;
  }
  return nullptr;
}

NodeInfo BackendNode::Describe() const {
  NodeInfo info;
  info.set_backend_id(id());
  for (const DeviceConfig& d : config_.devices()) {
    DeviceInfo* device = info.add_devices();
    device->set_device_id(d.id());
    device->set_kind(d.kind());
    device->set_num_cores(d.cpu_cores_size());
    device->set_memory_bytes(d.memory_bytes());
    if (d.kind() == DEVICE_KIND_EMULATED) {
      device->set_time_scale(d.time_scale());
    }
  }
  return info;
}

std::map<std::string, int64_t> BackendNode::MemoryCapacities() const {
  std::map<std::string, int64_t> capacities;
  for (const DeviceConfig& d : config_.devices()) {
    capacities[d.id()] = d.memory_bytes();
  }
  return capacities;
}

int64_t BackendNode::MemoryBytes(const GpuletPlan& g) const {
  int64_t bytes = 0;
  for (const ModelAssignment& a : g.models()) {
    auto it = emulated_latency_.find(a.model());
    if (it != emulated_latency_.end()) bytes += it->second.memory_bytes();
  }
  return bytes;
}

absl::Status BackendNode::CheckGpulet(const GpuletPlan& g,
                                      bool emulated) const {
  if (!(g.share_percent() > 0 && g.share_percent() <= 100)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpulet '", g.gpulet_id(), "': share ", g.share_percent(),
                     "% not in (0, 100]"));
  }
  for (const ModelAssignment& a : g.models()) {
    const ModelRepository::Entry* entry = repo_->Find(a.model());
    if (entry == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("gpulet '", g.gpulet_id(), "': model '", a.model(),
                       "' is not in this backend's repository"));
    }
    const bool a100 = !config_.a100_ground_truth_dir().empty();
    if (emulated && a100 && entry->config.segment_count() <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gpulet '", g.gpulet_id(), "': model '", a.model(),
          "' has no segment_count: the emulated A100 runs only the Abacus "
          "services"));
    }
    if (emulated && !a100 && !emulated_latency_.count(a.model())) {
      return absl::NotFoundError(absl::StrCat(
          "gpulet '", g.gpulet_id(), "': no emulated profile for model '",
          a.model(), "' in ", config_.profile_dir()));
    }
    if (!emulated && entry->config.platform() != "torchscript") {
      return absl::InvalidArgumentError(absl::StrCat(
          "gpulet '", g.gpulet_id(), "': model '", a.model(), "' (platform ",
          entry->config.platform(), ") runs only on emulated devices"));
    }
  }
  if (g.standby_share_percent() < 0 || g.standby_share_percent() > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpulet '", g.gpulet_id(), "': standby share ",
                     g.standby_share_percent(), "% not in [0, 100]"));
  }
  return absl::OkStatus();
}

absl::Status BackendNode::ResolveDevice(
    const DevicePlan& dp, std::map<std::string, GpuletSpec>* wanted) const {
  const DeviceConfig* device = FindDevice(dp.device_id());
  if (device == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("plan names device '", dp.device_id(),
                     "', which backend '", id(), "' does not have"));
  }
  std::vector<double> shares;
  for (const GpuletPlan& g : dp.gpulets()) shares.push_back(g.share_percent());
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
  int64_t bytes = 0;
  for (int i = 0; i < dp.gpulets_size(); ++i) {
    const GpuletPlan& g = dp.gpulets(i);
    RETURN_IF_ERROR(CheckGpulet(g, device->kind() == DEVICE_KIND_EMULATED));
    GpuletSpec spec{g, dp.device_id(), cores[i], MemoryBytes(g)};
    bytes += spec.memory_bytes;
    (*wanted)[g.gpulet_id()] = spec;
    if (g.standby_share_percent() > 0) {
      // The shadow: same models, its own share, same cores on a cpu
      // device; warm but idle until the frontend switches to it.
      spec.plan.set_gpulet_id(StandbyGpuletId(g.gpulet_id()));
      spec.plan.set_share_percent(g.standby_share_percent());
      spec.plan.set_standby_share_percent(0);
      bytes += spec.memory_bytes;
      (*wanted)[spec.id()] = std::move(spec);
    }
  }
  if (device->memory_bytes() > 0 && bytes > device->memory_bytes()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "device '", dp.device_id(), "': the plan's models need ", bytes >> 20,
        " MiB, the device has ", device->memory_bytes() >> 20, " MiB"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, GpuletSpec>> BackendNode::Resolve(
    const Plan& plan) const {
  std::map<std::string, GpuletSpec> wanted;
  for (const DevicePlan& dp : plan.devices()) {
    if (dp.backend_id() != id()) continue;
    RETURN_IF_ERROR(ResolveDevice(dp, &wanted));
  }
  return wanted;
}

ProxyConfig BackendNode::ProxyConfigFor(const GpuletSpec& g,
                                        const std::string& model_repository,
                                        const PollOptions& poll) const {
  const DeviceConfig* device = FindDevice(g.device_id);
  ProxyConfig config;
  config.set_gpulet_id(g.id());
  config.set_device_id(g.device_id);
  config.set_device_kind(device->kind());
  config.set_model_repository(model_repository);
  for (const std::string& name : g.ModelNames()) {
    *config.add_models() = repo_->Find(name)->config;
  }
  if (device->kind() == DEVICE_KIND_EMULATED) {
    EmulatedProxyConfig* e = config.mutable_emulated();
    e->set_share_percent(g.plan.share_percent());
    e->set_profile_dir(config_.profile_dir());
    e->set_time_scale(device->time_scale());
    e->set_noise_cv(device->noise_cv());
    e->set_seed(std::hash<std::string>()(g.id()));
    return config;
  }
  SetProxyPoll(poll, &config);
  if (device->kind() == DEVICE_KIND_CUDA) {
    config.set_threads(1);
  } else {
    for (int c : g.cores) config.add_cpu_cores(c);
    config.set_threads(static_cast<int>(g.cores.size()));
  }
  return config;
}

std::vector<std::optional<std::map<std::string, double>>>
BackendNode::InterferenceFactors(const std::vector<GpuletEntry>& live) const {
  auto placement = [this](const GpuletEntry& g, const ModelAssignment& a) {
    Placement p;
    auto it = emulated_latency_.find(a.model());
    p.model = it == emulated_latency_.end() ? nullptr : &it->second;
    p.batch = std::max(1, a.batch_size());
    p.share_percent = g.spec.plan.share_percent();
    return p;
  };
  std::vector<std::optional<std::map<std::string, double>>> out(live.size());
  for (size_t i = 0; i < live.size(); ++i) {
    const GpuletEntry& self = live[i];
    const DeviceConfig* device = FindDevice(self.spec.device_id);
    if (device == nullptr || device->kind() != DEVICE_KIND_EMULATED) continue;
    std::map<std::string, double>& factors = out[i].emplace();
    for (const ModelAssignment& a : self.spec.plan.models()) {
      const Placement me = placement(self, a);
      double factor = 1;
      for (size_t j = 0; j < live.size() && me.model != nullptr; ++j) {
        const GpuletEntry& other = live[j];
        if (j == i || other.spec.device_id != self.spec.device_id) continue;
        for (const ModelAssignment& b : other.spec.plan.models()) {
          const Placement them = placement(other, b);
          if (them.model == nullptr) continue;
          factor = std::max(factor, interference_->Factor(me, them));
        }
      }
      factors[a.model()] = factor;
    }
  }
  return out;
}

}  // namespace tessera
