// tessera_proxy: serves the models of one gpulet. Started by the backend
// daemon, which passes the control socket and the shared-memory region as
// inherited file descriptors. Also built without LibTorch as
// tessera_emulated_proxy (TESSERA_NO_TORCH), which serves emulated GPUs
// only and starts in milliseconds instead of ~0.6 s of CPU.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/allocator_tuning.h"
#include "common/cpu_affinity.h"
#include "common/model_repository.h"
#include "common/poll_governor.h"
#include "common/seqpacket_channel.h"
#include "common/shared_memory_region.h"
#include "common/status_macros.h"
#include "common/status_proto.h"
#include "common/text_proto.h"
#include "common/usage.h"
#include "overlap/service_catalog.h"
#include "proxy.pb.h"
#include "proxy/emulated_group_runner.h"
#include "proxy/emulated_model_runner.h"
#include "proxy/proxy_server.h"
#include "proxy/torch_group_runner.h"
#include "proxy/torch_model_runner.h"
#include "proxy/whole_query_runner.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(int, control_fd, 3, "Inherited SOCK_SEQPACKET control socket.");
ABSL_FLAG(int, shm_fd, 4, "Inherited shared-memory (memfd) descriptor.");
ABSL_FLAG(std::string, gpulet_id, "",
          "Gpulet this proxy serves, for ps and the log lines before the "
          "backend's configuration arrives; the configuration's id wins.");
ABSL_FLAG(int64_t, config_timeout_s, 60,
          "Seconds to wait for the backend's ProxyConfig, the first command "
          "on the control socket.");

namespace tessera {
namespace {

// Reports a startup failure to the backend before exiting.
int FailStartup(SeqPacketChannel* channel, const absl::Status& status) {
  spdlog::error("proxy startup failed: {}", status.ToString());
  ProxyEvent event;
  ToStatusProto(status, event.mutable_ready()->mutable_status());
  (void)channel->Send(event);
  return 1;
}

constexpr int kDefaultWarmupRuns = 3;

struct Runner {
  std::unique_ptr<ModelRunner> runner;
  // Devices that run operator groups (emulated A100); null otherwise.
  std::unique_ptr<GroupRunner> groups;
  // Emulated devices: what the profile predicts, reported instead of a
  // warm-up.
  std::vector<MeasuredLatency> predicted;
};

// An emulated A100 (the Abacus authors' group latencies): groups, and
// whole batches as groups of one.
absl::StatusOr<Runner> MakeEmulatedA100Runner(
    const ProxyConfig& config,
    const std::map<std::string, ModelConfig>& configs) {
  const EmulatedProxyConfig& e = config.emulated();
  for (const auto& [name, model] : configs) {
    if (model.segment_count() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "emulated A100: model '", name,
          "' has no segment_count (only the seven A100 services run here)"));
    }
  }
  EmulatedGroupRunner::Options go;
  go.ground_truth_dir = e.a100_ground_truth_dir();
  go.time_scale = e.time_scale() > 0 ? e.time_scale() : 1;
  go.seed = e.seed();
  ASSIGN_OR_RETURN(auto groups, EmulatedGroupRunner::Create(configs, go));
  Runner out;
  for (const auto& [name, model] : configs) {
    const int id = *ServiceCatalog::A100().IdOf(name);
    const bool sequence = ServiceCatalog::A100().service(id).sequence_input;
    for (int b : {1, model.max_batch_size()}) {
      MeasuredLatency m;
      m.set_model(name);
      m.set_batch_size(b);
      // The largest input: BERT at 64 tokens.
      m.set_latency_ms(groups->MeanMs({GroupMember{id, 0, model.segment_count(),
                                                   b, sequence ? 64 : 0}}) *
                       go.time_scale);
      out.predicted.push_back(m);
      if (model.max_batch_size() == 1) break;
    }
  }
  out.runner = std::make_unique<WholeQueryRunner>(groups.get());
  out.groups = std::move(groups);
  return out;
}

absl::StatusOr<Runner> MakeEmulatedRunner(
    const ProxyConfig& config,
    const std::map<std::string, ModelConfig>& configs) {
  const EmulatedProxyConfig& e = config.emulated();
  if (!e.a100_ground_truth_dir().empty()) {
    return MakeEmulatedA100Runner(config, configs);
  }
  std::map<std::string, ModelProfile> profiles;
  for (const auto& [name, model] : configs) {
    RETURN_IF_ERROR(ReadTextProto(
        e.profile_dir() + "/emulated/" + name + ".pbtxt", &profiles[name]));
  }
  EmulatedModelRunner::Options eo;
  eo.share_percent = e.share_percent();
  eo.time_scale = e.time_scale();
  eo.noise_cv = e.noise_cv();
  eo.seed = e.seed();
  ASSIGN_OR_RETURN(auto emulated,
                   EmulatedModelRunner::Create(profiles, configs, eo));
  Runner out;
  for (const auto& [name, model] : configs) {
    for (int b : {1, model.max_batch_size()}) {
      MeasuredLatency m;
      m.set_model(name);
      m.set_batch_size(b);
      m.set_latency_ms(
          absl::ToDoubleMilliseconds(emulated->ExpectedLatency(name, b)));
      out.predicted.push_back(m);
      if (model.max_batch_size() == 1) break;
    }
  }
  out.runner = std::move(emulated);
  return out;
}

absl::StatusOr<Runner> MakeTorchRunner(
    const ProxyConfig& config,
    const std::map<std::string, ModelConfig>& configs, int threads) {
#ifdef TESSERA_NO_TORCH
  return absl::FailedPreconditionError(
      "this proxy build (tessera_emulated_proxy) has no LibTorch: cpu and "
      "cuda devices need tessera_proxy");
#else
  ASSIGN_OR_RETURN(
      auto repo, ModelRepository::Load(config.model_repository(),
                                       ModelRepository::InvalidEntries::kSkip));
  std::map<std::string, std::string> paths;
  for (const auto& [name, model] : configs) {
    ASSIGN_OR_RETURN(int64_t version, repo->ResolveVersion(name, ""));
    paths[name] = repo->ModelPath(name, version);
  }
  TorchModelRunner::Options runner_options;
  runner_options.num_threads = threads;
  runner_options.cuda = config.device_kind() == DEVICE_KIND_CUDA;
  Runner out;
  ASSIGN_OR_RETURN(out.runner,
                   TorchModelRunner::Create(paths, configs, runner_options));
  if (config.operator_groups()) {
    std::map<std::string, std::string> segments;
    for (const auto& [name, path] : paths) {
      segments[name] =
          std::filesystem::path(path).replace_filename("segments.pt");
    }
    TorchGroupRunner::Options group_options;
    group_options.cores.assign(config.cpu_cores().begin(),
                               config.cpu_cores().end());
    group_options.cuda = runner_options.cuda;
    ASSIGN_OR_RETURN(
        out.groups,
        TorchGroupRunner::Create(segments, configs, std::move(group_options)));
  }
  return out;
#endif
}

// Pins the proxy to its cores; the intra-op thread count.
absl::StatusOr<int> PinAndCountThreads(const ProxyConfig& config) {
  int threads = config.threads();
  if (!config.cpu_cores().empty()) {
    const std::vector<int> cores(config.cpu_cores().begin(),
                                 config.cpu_cores().end());
    RETURN_IF_ERROR(SetCpuAffinity(cores));
    if (threads <= 0) threads = static_cast<int>(cores.size());
  }
  return std::max(threads, 1);
}

absl::StatusOr<Runner> MakeRunner(
    const ProxyConfig& config,
    const std::map<std::string, ModelConfig>& configs, int threads) {
  switch (config.device_kind()) {
    case DEVICE_KIND_EMULATED:
      return MakeEmulatedRunner(config, configs);
    case DEVICE_KIND_CPU:
    case DEVICE_KIND_CUDA:
      return MakeTorchRunner(config, configs, threads);
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("device kind ", DeviceKind_Name(config.device_kind()),
                       " is not supported (cpu, cuda, emulated)"));
  }
}

int Serve(const ProxyConfig& config, SeqPacketChannel* channel,
          SharedMemoryRegion* region) {
  auto threads = PinAndCountThreads(config);
  if (!threads.ok()) return FailStartup(channel, threads.status());
  auto poll = MakePollOptions(config.poll_window_us(),
                              config.poll_idle_percent(), "proxy_");
  if (!poll.ok()) return FailStartup(channel, poll.status());
  std::map<std::string, ModelConfig> configs;
  for (const ModelConfig& m : config.models()) {
    absl::Status valid = ModelRepository::Validate(m);
    if (!valid.ok()) return FailStartup(channel, valid);
    configs[m.name()] = m;
  }
  auto runner = MakeRunner(config, configs, *threads);
  if (!runner.ok()) return FailStartup(channel, runner.status());

  ProxyServer server(channel, region, runner->runner.get(), configs,
                     runner->groups.get());
  std::vector<MeasuredLatency> warmup = std::move(runner->predicted);
  if (config.device_kind() != DEVICE_KIND_EMULATED) {
    auto measured = server.Warmup(
        config.warmup_runs() > 0 ? config.warmup_runs() : kDefaultWarmupRuns);
    if (!measured.ok()) return FailStartup(channel, measured.status());
    warmup = std::move(*measured);
  }
  ProxyEvent ready;
  ToStatusProto(absl::OkStatus(), ready.mutable_ready()->mutable_status());
  ProxyConfig* running = ready.mutable_ready()->mutable_config();
  *running = config;
  running->clear_models();
  running->set_threads(*threads);
  if (running->warmup_runs() <= 0) running->set_warmup_runs(kDefaultWarmupRuns);
  for (const MeasuredLatency& m : warmup) {
    *ready.mutable_ready()->add_warmup() = m;
  }
  for (const auto& [name, unused] : configs) {
    absl::Status loaded = runner->runner->ModelStatus(name);
    if (!loaded.ok()) {
      ToStatusProto(loaded,
                    &(*ready.mutable_ready()->mutable_failed_models())[name]);
    }
  }
  if (!channel->Send(ready).ok()) return 1;
  spdlog::info(
      "proxy {} ready: {} {} model(s), {} thread(s), {} core(s), polls {} us, "
      "{}% idle",
      config.gpulet_id(), configs.size(), DeviceKind_Name(config.device_kind()),
      *threads, config.cpu_cores_size(), config.poll_window_us(),
      config.poll_idle_percent());
  absl::Status served = server.Serve(*poll);
  if (!served.ok()) {
    spdlog::error("proxy {} stopped: {}", config.gpulet_id(),
                  served.ToString());
    return 1;
  }
  return 0;
}

// Waits for the backend's ProxyConfig, the first command.
absl::StatusOr<ProxyConfig> ReceiveConfig(SeqPacketChannel* channel,
                                          absl::Duration timeout) {
  ProxyCommand command;
  RETURN_IF_ERROR(channel->Receive(&command, timeout));
  if (!command.has_configure()) {
    return absl::InvalidArgumentError(
        "the first command on the control socket must be a ProxyConfig");
  }
  return command.configure();
}

int Run(int control_fd, int shm_fd, absl::Duration config_timeout) {
  SeqPacketChannel channel(control_fd);
  auto config = ReceiveConfig(&channel, config_timeout);
  if (!config.ok()) return FailStartup(&channel, config.status());
  spdlog::set_pattern("[%H:%M:%S.%e] [proxy " + config->gpulet_id() +
                      "] [%l] %v");
  auto region = SharedMemoryRegion::FromFd(shm_fd);
  if (!region.ok()) return FailStartup(&channel, region.status());
  return Serve(*config, &channel, region->get());
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::TuneAllocatorForLargeMessages();
  tessera::SetUsage(
      "Tessera proxy: serves the models of one gpulet on a device "
      "partition (TorchScript on cpu or cuda, or an emulated GPU).\nStarted "
      "by tessera_backend, not by hand: what it serves arrives as a "
      "ProxyConfig, the first command on its control socket.");
  absl::ParseCommandLine(argc, argv);
  // absl's lock-order (deadlock) detection costs graph bookkeeping on every
  // lock on the serving path; the tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // No PR_SET_PDEATHSIG: it fires when the spawning *thread* exits (the
  // backend spawns from a gRPC pool thread). The proxy exits instead when
  // its control channel closes, which happens when the backend dies.
  spdlog::set_pattern("[%H:%M:%S.%e] [proxy " + absl::GetFlag(FLAGS_gpulet_id) +
                      "] [%l] %v");
  return tessera::Run(absl::GetFlag(FLAGS_control_fd),
                      absl::GetFlag(FLAGS_shm_fd),
                      absl::Seconds(absl::GetFlag(FLAGS_config_timeout_s)));
}
