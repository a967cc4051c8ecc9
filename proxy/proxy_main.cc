// tessera_proxy: serves the models of one gpulet. Started by the backend
// daemon, which passes the control socket and the shared-memory region as
// inherited file descriptors. Also built without LibTorch as
// tessera_emulated_proxy (TESSERA_NO_TORCH), which serves emulated GPUs
// only and starts in milliseconds instead of ~0.6 s of CPU.
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/allocator_tuning.h"
#include "common/cpu_affinity.h"
#include "common/grpc_status_util.h"
#include "common/model_repository.h"
#include "common/poll_governor.h"
#include "common/seqpacket_channel.h"
#include "common/shared_memory_region.h"
#include "common/text_proto.h"
#include "common/usage.h"
#include "proxy.pb.h"
#include "proxy/emulated_model_runner.h"
#include "proxy/proxy_server.h"
#include "proxy/torch_model_runner.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(int, control_fd, 3, "Inherited SOCK_SEQPACKET control socket.");
ABSL_FLAG(int, shm_fd, 4, "Inherited shared-memory (memfd) descriptor.");
ABSL_FLAG(std::string, model_repository, "", "Model repository root.");
ABSL_FLAG(std::string, models, "", "Comma-separated models to serve.");
ABSL_FLAG(std::string, device, "cpu",
          "Device kind: cpu (LibTorch on the pinned cores), cuda (LibTorch on "
          "the GPU and MPS share set in the environment by the backend) or "
          "emulated (no model runs; each batch takes the time its profile "
          "predicts).");
ABSL_FLAG(std::string, profile_dir, "",
          "emulated: directory with emulated/<model>.pbtxt profiles.");
ABSL_FLAG(double, share_percent, 100, "emulated: the gpulet's share.");
ABSL_FLAG(double, time_scale, 1, "emulated: latency multiplier k.");
ABSL_FLAG(double, noise_cv, 0,
          "emulated: coefficient of variation of latency noise.");
ABSL_FLAG(uint64_t, seed, 1, "emulated: noise seed.");
ABSL_FLAG(std::string, cores, "",
          "CPU cores to pin to, e.g. \"0\" or \"0-3\"; empty = no pinning.");
ABSL_FLAG(int, threads, 0, "Intra-op threads; 0 = one per pinned core.");
ABSL_FLAG(int, warmup_runs, 3, "Timed warm-up runs per batch size.");
ABSL_FLAG(std::string, gpulet_id, "", "Gpulet this proxy serves (for logs).");
ABSL_FLAG(int64_t, poll_us, tessera::kDefaultPollWindowUs,
          "Before sleeping for the next batch, poll the control channel up "
          "to this long (microseconds): a batch that comes within it is "
          "taken without a wake-up, at the price of keeping the partition's "
          "cores busy meanwhile. Polls only while batches come within that "
          "time of the last result; after a longer gap it sleeps at once. "
          "0: never poll.");
ABSL_FLAG(double, poll_idle_percent, tessera::kDefaultPollIdlePercent,
          "Polls that find nothing may take at most this percent of the "
          "wall time per second; then the proxy sleeps at once until the "
          "next second. 100: no bound; 0: no polling.");

namespace tessera {
namespace {

struct ProxyOptions {
  int control_fd;
  int shm_fd;
  std::string model_repository;
  std::vector<std::string> models;
  std::string device;
  std::string cores;
  int threads;
  int warmup_runs;
  std::string gpulet_id;
  PollOptions poll;
  std::string profile_dir;
  double share_percent;
  double time_scale;
  double noise_cv;
  uint64_t seed;
};

// Reports a startup failure to the backend before exiting.
int FailStartup(SeqPacketChannel* channel, const absl::Status& status) {
  spdlog::error("proxy startup failed: {}", status.ToString());
  ProxyEvent event;
  ToStatusProto(status, event.mutable_ready()->mutable_status());
  (void)channel->Send(event);
  return 1;
}

int Run(const ProxyOptions& options) {
  SeqPacketChannel channel(options.control_fd);
  auto region = SharedMemoryRegion::FromFd(options.shm_fd);
  if (!region.ok()) return FailStartup(&channel, region.status());

  int threads = options.threads;
  if (!options.cores.empty()) {
    auto cores = ParseCoreList(options.cores);
    if (!cores.ok()) return FailStartup(&channel, cores.status());
    absl::Status pinned = SetCpuAffinity(*cores);
    if (!pinned.ok()) return FailStartup(&channel, pinned);
    if (threads <= 0) threads = static_cast<int>(cores->size());
  }
  if (threads <= 0) threads = 1;
  if (options.device != "cpu" && options.device != "emulated" &&
      options.device != "cuda") {
    return FailStartup(&channel,
                       absl::InvalidArgumentError("device '" + options.device +
                                                  "' is not supported"));
  }

  auto repo = ModelRepository::Load(options.model_repository);
  if (!repo.ok()) return FailStartup(&channel, repo.status());
  std::map<std::string, ModelConfig> configs;
  for (const std::string& name : options.models) {
    const ModelRepository::Entry* entry = (*repo)->Find(name);
    if (entry == nullptr) {
      return FailStartup(&channel,
                         absl::NotFoundError("unknown model '" + name + "'"));
    }
    configs[name] = entry->config;
  }

  std::unique_ptr<ModelRunner> runner;
  std::vector<MeasuredLatency> warmup;
  if (options.device == "emulated") {
    std::map<std::string, ModelProfile> profiles;
    for (const auto& [name, config] : configs) {
      absl::Status read =
          ReadTextProto(options.profile_dir + "/emulated/" + name + ".pbtxt",
                        &profiles[name]);
      if (!read.ok()) return FailStartup(&channel, read);
    }
    EmulatedModelRunner::Options eo;
    eo.share_percent = options.share_percent;
    eo.time_scale = options.time_scale;
    eo.noise_cv = options.noise_cv;
    eo.seed = options.seed;
    auto emulated = EmulatedModelRunner::Create(profiles, configs, eo);
    if (!emulated.ok()) return FailStartup(&channel, emulated.status());
    // Nothing to warm up: report what the profile predicts instead of
    // sleeping through it.
    for (const auto& [name, config] : configs) {
      for (int b : {1, config.max_batch_size()}) {
        MeasuredLatency m;
        m.set_model(name);
        m.set_batch_size(b);
        m.set_latency_ms(
            absl::ToDoubleMilliseconds((*emulated)->ExpectedLatency(name, b)));
        warmup.push_back(m);
        if (config.max_batch_size() == 1) break;
      }
    }
    runner = std::move(*emulated);
  } else {
#ifdef TESSERA_NO_TORCH
    return FailStartup(&channel,
                       absl::FailedPreconditionError(
                           "this proxy build (tessera_emulated_proxy) has no "
                           "LibTorch: cpu devices need tessera_proxy"));
#else
    std::map<std::string, std::string> paths;
    for (const auto& [name, config] : configs) {
      auto version = (*repo)->ResolveVersion(name, "");
      if (!version.ok()) return FailStartup(&channel, version.status());
      paths[name] = (*repo)->ModelPath(name, *version);
    }
    TorchModelRunner::Options runner_options;
    runner_options.num_threads = threads;
    runner_options.cuda = options.device == "cuda";
    auto torch_runner =
        TorchModelRunner::Create(paths, configs, runner_options);
    if (!torch_runner.ok()) return FailStartup(&channel, torch_runner.status());
    runner = std::move(*torch_runner);
#endif
  }

  ProxyServer server(&channel, region->get(), runner.get(), configs);
  if (options.device != "emulated") {
    auto measured = server.Warmup(options.warmup_runs);
    if (!measured.ok()) return FailStartup(&channel, measured.status());
    warmup = std::move(*measured);
  }
  ProxyEvent ready;
  ToStatusProto(absl::OkStatus(), ready.mutable_ready()->mutable_status());
  for (const MeasuredLatency& m : warmup) {
    *ready.mutable_ready()->add_warmup() = m;
  }
  if (!channel.Send(ready).ok()) return 1;
  spdlog::info(
      "proxy {} ready: {} {} model(s), {} thread(s), cores '{}', polls {} us, "
      "{}% idle",
      options.gpulet_id, configs.size(), options.device, threads, options.cores,
      absl::ToInt64Microseconds(options.poll.window),
      options.poll.idle_budget * 100);
  absl::Status served = server.Serve(options.poll);
  if (!served.ok()) {
    spdlog::error("proxy {} stopped: {}", options.gpulet_id, served.ToString());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::TuneAllocatorForLargeMessages();
  tessera::SetUsage(
      "Tessera proxy: serves the models of one gpulet on a device "
      "partition (TorchScript on cpu or cuda, or an emulated GPU).\nStarted by "
      "tessera_backend, not by hand.");
  absl::ParseCommandLine(argc, argv);
  // absl's lock-order (deadlock) detection costs graph bookkeeping on every
  // lock on the serving path; the tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // No PR_SET_PDEATHSIG: it fires when the spawning *thread* exits (the
  // backend spawns from a gRPC pool thread). The proxy exits instead when
  // its control channel closes, which happens when the backend dies.
  tessera::ProxyOptions options;
  options.control_fd = absl::GetFlag(FLAGS_control_fd);
  options.shm_fd = absl::GetFlag(FLAGS_shm_fd);
  options.model_repository = absl::GetFlag(FLAGS_model_repository);
  options.models =
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipWhitespace());
  options.device = absl::GetFlag(FLAGS_device);
  options.cores = absl::GetFlag(FLAGS_cores);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.warmup_runs = absl::GetFlag(FLAGS_warmup_runs);
  options.gpulet_id = absl::GetFlag(FLAGS_gpulet_id);
  auto poll = tessera::MakePollOptions(absl::GetFlag(FLAGS_poll_us),
                                       absl::GetFlag(FLAGS_poll_idle_percent));
  if (!poll.ok()) {
    spdlog::error("{}", std::string(poll.status().message()));
    return 2;
  }
  options.poll = *poll;
  options.profile_dir = absl::GetFlag(FLAGS_profile_dir);
  options.share_percent = absl::GetFlag(FLAGS_share_percent);
  options.time_scale = absl::GetFlag(FLAGS_time_scale);
  options.noise_cv = absl::GetFlag(FLAGS_noise_cv);
  options.seed = absl::GetFlag(FLAGS_seed);
  spdlog::set_pattern("[%H:%M:%S.%e] [proxy " + options.gpulet_id +
                      "] [%l] %v");
  return tessera::Run(options);
}
