// tessera_proxy: serves the models of one gpulet. Started by the backend
// daemon, which passes the control socket and the shared-memory region as
// inherited file descriptors.
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/cpu_affinity.h"
#include "common/grpc_status_util.h"
#include "common/model_repository.h"
#include "common/seqpacket_channel.h"
#include "common/shared_memory_region.h"
#include "proxy.pb.h"
#include "proxy/proxy_server.h"
#include "proxy/torch_model_runner.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(int, control_fd, 3, "Inherited SOCK_SEQPACKET control socket.");
ABSL_FLAG(int, shm_fd, 4, "Inherited shared-memory (memfd) descriptor.");
ABSL_FLAG(std::string, model_repository, "", "Model repository root.");
ABSL_FLAG(std::string, models, "", "Comma-separated models to serve.");
ABSL_FLAG(std::string, device, "cpu", "Device kind: cpu.");
ABSL_FLAG(std::string, cores, "",
          "CPU cores to pin to, e.g. \"0\" or \"0-3\"; empty = no pinning.");
ABSL_FLAG(int, threads, 0, "Intra-op threads; 0 = one per pinned core.");
ABSL_FLAG(int, warmup_runs, 3, "Timed warm-up runs per batch size.");
ABSL_FLAG(std::string, gpulet_id, "", "Gpulet this proxy serves (for logs).");

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
  if (options.device != "cpu") {
    return FailStartup(&channel,
                       absl::InvalidArgumentError("device '" + options.device +
                                                  "' is not supported"));
  }

  auto repo = ModelRepository::Load(options.model_repository);
  if (!repo.ok()) return FailStartup(&channel, repo.status());
  std::map<std::string, std::string> paths;
  std::map<std::string, ModelConfig> configs;
  for (const std::string& name : options.models) {
    auto version = (*repo)->ResolveVersion(name, "");
    if (!version.ok()) return FailStartup(&channel, version.status());
    paths[name] = (*repo)->ModelPath(name, *version);
    configs[name] = (*repo)->Find(name)->config;
  }
  TorchModelRunner::Options runner_options;
  runner_options.num_threads = threads;
  auto runner = TorchModelRunner::Create(paths, configs, runner_options);
  if (!runner.ok()) return FailStartup(&channel, runner.status());

  ProxyServer server(&channel, region->get(), runner->get(), configs);
  auto warmup = server.Warmup(options.warmup_runs);
  if (!warmup.ok()) return FailStartup(&channel, warmup.status());
  ProxyEvent ready;
  ToStatusProto(absl::OkStatus(), ready.mutable_ready()->mutable_status());
  for (const MeasuredLatency& m : *warmup) {
    *ready.mutable_ready()->add_warmup() = m;
  }
  if (!channel.Send(ready).ok()) return 1;
  spdlog::info("proxy {} ready: {} model(s), {} thread(s), cores '{}'",
               options.gpulet_id, configs.size(), threads, options.cores);
  absl::Status served = server.Serve();
  if (!served.ok()) {
    spdlog::error("proxy {} stopped: {}", options.gpulet_id, served.ToString());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Tessera proxy: serves the TorchScript models of one gpulet on a "
      "device partition.\nStarted by tessera_backend, not by hand.");
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
  spdlog::set_pattern("[%H:%M:%S.%e] [proxy " + options.gpulet_id +
                      "] [%l] %v");
  return tessera::Run(options);
}
