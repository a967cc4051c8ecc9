// tessera_backend: the per-node daemon. Owns the node's devices, starts one
// proxy process per gpulet of the plan the frontend sends, and executes
// batches on them.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "backend/backend_async_server.h"
#include "backend/backend_service.h"
#include "common/allocator_tuning.h"
#include "common/http_endpoint.h"
#include "common/listen_address.h"
#include "common/poll_governor.h"
#include "common/shared_secret.h"
#include "common/status_macros.h"
#include "common/termination_signals.h"
#include "common/text_proto.h"
#include "common/tls_config.h"
#include "common/usage.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:8101",
          "host:port to serve on; port 0 picks a free port. Beyond loopback "
          "the backend needs --cluster_token_file or mutual TLS "
          "(--tls_ca_file), or --allow_unauthenticated.");
ABSL_FLAG(std::string, cluster_token_file, "",
          "File whose first line is the token the frontend must send with "
          "every call (the frontend's --cluster_token_file); calls without "
          "it get UNAUTHENTICATED, with another PERMISSION_DENIED. At least "
          "16 characters (openssl rand -hex 32).");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate of this backend: its port serves TLS (with "
          "--tls_key_file).");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA: callers must present a certificate it signed (mutual "
          "TLS; the frontend's --tls_cert_file).");
ABSL_FLAG(bool, allow_unauthenticated, false,
          "Listen beyond loopback without a token or mutual TLS: anyone who "
          "reaches the port can run plans and read batches.");
ABSL_FLAG(std::string, port_file, "",
          "If set, the chosen port is written to this file once serving.");
ABSL_FLAG(std::string, config, "",
          "BackendConfig text file; default: one cpu device with every core "
          "this process may use.");
ABSL_FLAG(std::string, id, "backend0",
          "Backend id when --config is not given.");
ABSL_FLAG(std::string, model_repository, "models", "Model repository root.");
ABSL_FLAG(double, drain_s, 10,
          "On SIGTERM or SIGINT: the backend reports itself draining, so "
          "the frontend plans without it, serves what it is still sent "
          "until the frontend's heartbeat says its plan in force routes "
          "nothing here (or no heartbeat came for 5 s) and no batch came "
          "for a second, lets the proxies finish their batches and exits; "
          "all within this many seconds (plus at most one for the "
          "proxies).");
ABSL_FLAG(int, emulated_gpus, 0,
          "Without --config: expose this many emulated GPUs gpu0.. instead "
          "of the cpu device.");
ABSL_FLAG(double, time_scale, 1,
          "Emulated GPUs: latency multiplier k (the frontend's time_scale "
          "must match).");
ABSL_FLAG(double, noise_cv, 0.02,
          "Emulated GPUs: coefficient of variation of latency noise.");
ABSL_FLAG(int64_t, emulated_memory_mb, 11264,
          "Emulated GPUs: memory each offers (MiB; 0 = unlimited).");
ABSL_FLAG(std::string, profile_dir, "profiles",
          "Profile directory (emulated/<model>.pbtxt) when the config does "
          "not name one.");
ABSL_FLAG(std::string, proxy_binary, "",
          "Path of tessera_proxy; default: next to this binary.");
ABSL_FLAG(std::string, emulated_proxy_binary, "",
          "Path of tessera_emulated_proxy (emulated GPUs); default: next to "
          "this binary.");
ABSL_FLAG(int, proxy_slots, 4, "Batches that may be queued in each proxy.");
ABSL_FLAG(int, max_gpulets_per_device, 16,
          "Most proxy processes one device may run under one plan (standby "
          "shadows count); a plan asking for more is refused "
          "(INVALID_ARGUMENT).");
ABSL_FLAG(int64_t, poll_us, tessera::kDefaultPollWindowUs,
          "The event loop polls for its next event (a batch from the "
          "frontend, a result to send) up to this many microseconds before "
          "it sleeps, while events come within this window of each other: "
          "it saves the wake-up of a sleeping core (about 100 us on a VM) at "
          "the cost of a busy core while it polls. 0: it sleeps at once. "
          "See docs/benchmarks.md.");
ABSL_FLAG(int64_t, proxy_poll_us, tessera::kDefaultPollWindowUs,
          "cpu and cuda proxies poll for their next batch up to this long "
          "(microseconds) before they sleep, while batches come within this "
          "window of the last result. A batch that comes while it polls "
          "skips a wake-up (tens of microseconds on VMs, where an idle core "
          "sleeps in the hypervisor), but the partition's cores stay busy "
          "meanwhile. 0: never poll.");
ABSL_FLAG(double, poll_idle_percent, tessera::kDefaultPollIdlePercent,
          "Polls that find nothing may take at most this percent of the "
          "wall time per second of the event loop and of each proxy; then "
          "it sleeps at once until the next second (bounds the polling's "
          "cost when traffic is sparse). 100: no bound; 0: no polling.");
ABSL_FLAG(std::string, mps_dir, "/tmp/tessera-mps",
          "CUDA devices: root of each GPU's MPS pipe and log directories "
          "(<mps_dir>/gpu<i>/{pipe,log}).");
ABSL_FLAG(std::string, mps_control, "nvidia-cuda-mps-control",
          "CUDA devices: the MPS control binary (looked up on PATH).");
ABSL_FLAG(std::string, group_predictor, "",
          "Operator-group gpulets (the abacus policy, and its fcfs/sjf/edf "
          "baselines): the learned group-latency predictor of this node's "
          "devices (GroupPredictorProto text, written by "
          "tessera_group_profiler --predictor_out). Empty: such gpulets "
          "fail to start.");
ABSL_FLAG(std::string, a100_ground_truth_dir, "",
          "Emulated GPUs as an A100 running operator groups: the Abacus "
          "authors' group-latency checkpoints (../shared/data/abacus-a100), "
          "read at start-up by each emulated proxy (the --config's "
          "a100_ground_truth_dir wins). Empty: emulated GPUs take latencies "
          "from --profile_dir profiles.");
ABSL_FLAG(int, max_message_mb, 512, "Largest gRPC message accepted (MiB).");
ABSL_FLAG(int, http_port, -1,
          "HTTP port for /metrics (Prometheus) and /v2/health/{live,ready} "
          "on the --listen host; 0 picks a free port, -1 (default) none.");
ABSL_FLAG(std::string, http_port_file, "",
          "If set, the HTTP port is written to this file once serving.");

namespace {

std::string NextToSelf(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / name).string();
}

// The node's devices: --config, or one cpu device, or --emulated_gpus.
absl::Status NodeConfigFromFlags(tessera::BackendConfig* config) {
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (!config_path.empty()) {
    RETURN_IF_ERROR(tessera::ReadTextProto(config_path, config));
  } else {
    config->set_id(absl::GetFlag(FLAGS_id));
    const int gpus = absl::GetFlag(FLAGS_emulated_gpus);
    if (gpus <= 0) {
      tessera::DeviceConfig* cpu = config->add_devices();
      cpu->set_id("cpu0");
      cpu->set_kind(tessera::DEVICE_KIND_CPU);
    }
    for (int i = 0; i < gpus; ++i) {
      tessera::DeviceConfig* gpu = config->add_devices();
      gpu->set_id("gpu" + std::to_string(i));
      gpu->set_kind(tessera::DEVICE_KIND_EMULATED);
      gpu->set_time_scale(absl::GetFlag(FLAGS_time_scale));
      gpu->set_noise_cv(absl::GetFlag(FLAGS_noise_cv));
      gpu->set_memory_bytes(absl::GetFlag(FLAGS_emulated_memory_mb) << 20);
    }
  }
  if (config->a100_ground_truth_dir().empty()) {
    config->set_a100_ground_truth_dir(
        absl::GetFlag(FLAGS_a100_ground_truth_dir));
  }
  if (config->profile_dir().empty()) {
    config->set_profile_dir(absl::GetFlag(FLAGS_profile_dir));
  }
  return absl::OkStatus();
}

absl::Status CheckExecutable(const std::string& what, const std::string& path) {
  if (access(path.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " '", path, "' is not executable"));
  }
  return absl::OkStatus();
}

absl::StatusOr<tessera::BackendServiceImpl::Options> OptionsFromFlags() {
  tessera::BackendServiceImpl::Options options;
  RETURN_IF_ERROR(NodeConfigFromFlags(&options.config));
  options.model_repository = absl::GetFlag(FLAGS_model_repository);
  options.proxies.proxy_binary = absl::GetFlag(FLAGS_proxy_binary);
  if (options.proxies.proxy_binary.empty()) {
    options.proxies.proxy_binary = NextToSelf("tessera_proxy");
  }
  options.proxies.emulated_proxy_binary =
      absl::GetFlag(FLAGS_emulated_proxy_binary);
  if (options.proxies.emulated_proxy_binary.empty()) {
    options.proxies.emulated_proxy_binary =
        NextToSelf("tessera_emulated_proxy");
  }
  bool any_emulated = false;
  for (const auto& d : options.config.devices()) {
    any_emulated = any_emulated || d.kind() == tessera::DEVICE_KIND_EMULATED;
  }
  if (any_emulated) {
    RETURN_IF_ERROR(CheckExecutable("emulated proxy binary",
                                    options.proxies.emulated_proxy_binary));
  }
  RETURN_IF_ERROR(
      CheckExecutable("proxy binary", options.proxies.proxy_binary));
  options.proxies.proxy_slots = absl::GetFlag(FLAGS_proxy_slots);
  options.max_gpulets_per_device = absl::GetFlag(FLAGS_max_gpulets_per_device);
  if (options.max_gpulets_per_device < 1) {
    return absl::InvalidArgumentError("--max_gpulets_per_device must be >= 1");
  }
  ASSIGN_OR_RETURN(options.proxies.proxy_poll,
                   tessera::MakePollOptions(
                       absl::GetFlag(FLAGS_proxy_poll_us),
                       absl::GetFlag(FLAGS_poll_idle_percent), "proxy_"));
  if (!absl::GetFlag(FLAGS_group_predictor).empty()) {
    auto predictor = std::make_shared<tessera::GroupPredictorProto>();
    RETURN_IF_ERROR(tessera::ReadTextProto(absl::GetFlag(FLAGS_group_predictor),
                                           predictor.get()));
    options.proxies.group_predictor = std::move(predictor);
  }
  options.proxies.mps.base_dir = absl::GetFlag(FLAGS_mps_dir);
  options.proxies.mps.control_binary = absl::GetFlag(FLAGS_mps_control);
  return options;
}

// The port: address, TLS and who may call.
absl::StatusOr<tessera::BackendAsyncServer::Options> ServerOptionsFromFlags() {
  tessera::BackendAsyncServer::Options options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_mb) * (1 << 20);
  ASSIGN_OR_RETURN(options.tls, tessera::TlsConfig::Load(
                                    {absl::GetFlag(FLAGS_tls_cert_file),
                                     absl::GetFlag(FLAGS_tls_key_file),
                                     absl::GetFlag(FLAGS_tls_ca_file)}));
  if (options.tls.verifies_peers() && !options.tls.serves_tls()) {
    return absl::InvalidArgumentError(
        "--tls_ca_file verifies callers over TLS: it needs --tls_cert_file "
        "and --tls_key_file");
  }
  if (!absl::GetFlag(FLAGS_cluster_token_file).empty()) {
    ASSIGN_OR_RETURN(options.secret,
                     tessera::SharedSecret::FromFile(
                         absl::GetFlag(FLAGS_cluster_token_file)));
  }
  const bool authenticated =
      !options.secret.empty() || options.tls.verifies_peers();
  if (!authenticated && !tessera::IsLoopbackListenAddress(options.listen) &&
      !absl::GetFlag(FLAGS_allow_unauthenticated)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--listen=", options.listen,
        " is reachable beyond this host but nothing authenticates the "
        "frontend: pass --cluster_token_file (the frontend's too) or "
        "--tls_ca_file, or --allow_unauthenticated"));
  }
  if (!authenticated) {
    spdlog::warn(
        "no --cluster_token_file or --tls_ca_file: any local "
        "process may call this backend");
  }
  return options;
}

void WritePortFile(const std::string& path, int port) {
  if (path.empty()) return;
  std::ofstream(path + ".tmp") << port << "\n";
  std::filesystem::rename(path + ".tmp", path);
}

absl::StatusOr<std::unique_ptr<tessera::HttpEndpoint>> StartHttp(
    tessera::BackendServiceImpl* service) {
  if (absl::GetFlag(FLAGS_http_port) < 0) return nullptr;
  const std::string listen = absl::GetFlag(FLAGS_listen);
  ASSIGN_OR_RETURN(
      auto http,
      tessera::HttpEndpoint::Start(
          listen.substr(0, listen.rfind(':')), absl::GetFlag(FLAGS_http_port),
          {[service] { return service->RenderMetrics(); },
           [service] { return service->Ready(); }},
          absl::GetFlag(FLAGS_tls_cert_file),
          absl::GetFlag(FLAGS_tls_key_file)));
  spdlog::info("backend metrics and health on HTTP port {}", http->port());
  WritePortFile(absl::GetFlag(FLAGS_http_port_file), http->port());
  return http;
}

}  // namespace

int main(int argc, char** argv) {
  tessera::TuneAllocatorForLargeMessages();
  tessera::SetUsage(
      "Tessera backend daemon: runs one proxy process per gpulet of the plan "
      "the frontend sends and executes batches on them.\n"
      "Example: tessera_backend --listen=127.0.0.1:8101 "
      "--model_repository=models\n"
      "Emulated GPUs: tessera_backend --emulated_gpus=2 --time_scale=10 "
      "--model_repository=configs/emulated/models --profile_dir=profiles");
  absl::ParseCommandLine(argc, argv);
  // absl's lock-order (deadlock) detection costs graph bookkeeping on every
  // lock on the serving path; the tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  tessera::BlockTerminationSignals();
  spdlog::set_pattern("[%H:%M:%S.%e] [backend] [%l] %v");

  auto options = OptionsFromFlags();
  auto loop_poll = tessera::MakePollOptions(
      absl::GetFlag(FLAGS_poll_us), absl::GetFlag(FLAGS_poll_idle_percent));
  for (const absl::Status& s : {options.status(), loop_poll.status()}) {
    if (!s.ok()) {
      spdlog::error("{}", s.ToString());
      return 2;
    }
  }
  auto service = tessera::BackendServiceImpl::Create(*options);
  if (!service.ok()) {
    spdlog::error("{}", service.status().ToString());
    return 2;
  }

  auto server_options = ServerOptionsFromFlags();
  if (!server_options.ok()) {
    spdlog::error("{}", server_options.status().ToString());
    return 2;
  }
  server_options->poll = *loop_poll;
  auto server =
      tessera::BackendAsyncServer::Start(*server_options, service->get());
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 2;
  }
  const int port = (*server)->port();
  spdlog::info("backend '{}' listening on port {}", options->config.id(), port);
  auto http = StartHttp(service->get());
  if (!http.ok()) {
    spdlog::error("{}", http.status().ToString());
    return 2;
  }
  WritePortFile(absl::GetFlag(FLAGS_port_file), port);

  tessera::WaitForTerminationSignal();
  // Health says "draining": the frontend plans without this backend while
  // it keeps serving; once its heartbeat says the new plan is in force and
  // no batch came for a second, the proxies finish what they hold and the
  // backend exits.
  const absl::Time drain_until =
      absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_drain_s));
  spdlog::info("shutting down: draining until the frontend plans without us");
  if (!(*service)->AwaitFrontendLeft(absl::Seconds(1), absl::Seconds(5),
                                     drain_until)) {
    spdlog::warn("batches still arrive after --drain_s; stopping anyway");
  }
  (*service)->DrainProxies(
      std::max(absl::Seconds(1), drain_until - absl::Now()));
  http->reset();
  (*service)->StopProxies();
  (*server)->Shutdown(absl::Seconds(5));
  return 0;
}
