// tessera_frontend: the cluster's only client-facing process. Serves the
// KServe v2 gRPC inference protocol, places models on the backends' devices
// with the configured scheduling policy and batches requests to them.
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/allocator_tuning.h"
#include "common/poll_governor.h"
#include "common/shared_secret.h"
#include "common/status_macros.h"
#include "common/termination_signals.h"
#include "common/text_proto.h"
#include "common/tls_config.h"
#include "common/usage.h"
#include "frontend/frontend_server.h"
#include "scheduler/policy_registry.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:8100",
          "host:port of the KServe v2 gRPC service; port 0 picks one.");
ABSL_FLAG(std::string, port_file, "",
          "If set, the chosen port is written to this file once serving.");
ABSL_FLAG(std::string, config, "",
          "FrontendConfig text file (backends, policy, static plan). "
          "Required.");
ABSL_FLAG(std::string, model_repository, "models", "Model repository root.");
ABSL_FLAG(std::string, policy, "",
          "Scheduling policy; overrides the config's (names: see the usage "
          "text above).");
ABSL_FLAG(std::string, backends, "",
          "id=host:port,... of the backend daemons; replaces the config's "
          "backends (e.g. a compose file's service names).");
ABSL_FLAG(std::string, plan_file, "",
          "If set, each plan installed is written here (text format).");
ABSL_FLAG(int, http_port, 8000,
          "HTTP port on the --listen host for KServe v2 REST (/v2/..., with "
          "Triton's binary-data extension), /metrics (Prometheus) and "
          "/v2/health/{live,ready}; 0 picks a free port, -1 turns it off.");
ABSL_FLAG(std::string, http_port_file, "",
          "If set, the HTTP port is written to this file once serving.");
ABSL_FLAG(std::string, admin_listen, "127.0.0.1:8190",
          "host:port of the admin service (tessera_admin); empty: none. "
          "Never the inference port; loopback by default.");
ABSL_FLAG(std::string, admin_token_file, "",
          "File whose first line is the token the admin service and the "
          "KServe repository RPCs load/unload require (metadata "
          "'authorization: Bearer <token>'; tessera_admin --token_file). At "
          "least 16 characters. Empty: those RPCs are refused.");
ABSL_FLAG(std::string, cluster_token_file, "",
          "File whose first line is the token sent with every call to the "
          "backends (their --cluster_token_file).");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate: the KServe gRPC and HTTP ports and the admin "
          "port serve TLS (with --tls_key_file); with --tls_ca_file it is "
          "also the certificate the frontend presents to backends.");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(std::string, tls_ca_file, "",
          "PEM CA: the frontend talks TLS to the backends and verifies their "
          "certificates against it (needs --tls_cert_file where backends "
          "require mutual TLS).");
ABSL_FLAG(std::string, admin_port_file, "",
          "If set, the admin port is written to this file once serving.");
ABSL_FLAG(double, drain_s, 10,
          "On SIGTERM or SIGINT: new calls are refused (UNAVAILABLE) and "
          "the ones accepted are served for up to this many seconds before "
          "the frontend exits.");
ABSL_FLAG(int, max_message_mb, 64,
          "Largest request accepted (MiB); larger: RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_inflight_calls, 16384,
          "ModelInfer calls held at once (accepted, not yet answered); "
          "beyond: RESOURCE_EXHAUSTED at once. 0: no limit.");
ABSL_FLAG(int64_t, max_inflight_calls_per_model, 4096,
          "Calls of one model held at once, so that one flooded model cannot "
          "take the whole budget; beyond: RESOURCE_EXHAUSTED. 0: no limit.");
ABSL_FLAG(int64_t, max_inflight_mb, 1024,
          "Request bytes held at once (MiB; each call counts its message "
          "plus 4 KiB); beyond: RESOURCE_EXHAUSTED. 0: no limit.");
ABSL_FLAG(double, max_queue_slo_fraction, 0,
          "Refuse a call (RESOURCE_EXHAUSTED) while the calls of its model "
          "queued ahead of it have waited this share of the model's SLO "
          "(the frontend takes calls faster than its gpulets can send them); "
          "0: never.");
ABSL_FLAG(double, max_backlog_slo_fraction, 0.5,
          "Refuse a call (RESOURCE_EXHAUSTED) when the event loops have been "
          "busy without a break for this share of its model's SLO: calls "
          "may have queued in gRPC that long, and serving them would only "
          "make the later ones late too (docs/live-serving.md, Overload). "
          "0: never.");
ABSL_FLAG(bool, coalesce_stream_answers, false,
          "Hold a ModelStreamInfer answer that would leave alone until the "
          "event loop has nothing else to do (or a few events later), so "
          "answers made close together share one socket write. Cuts the "
          "frontend's CPU per refused stream request under overload; off by "
          "default (no goodput gain measured, docs/live-serving.md).");
ABSL_FLAG(int, event_loops, 1,
          "Threads serving the KServe calls and the backend streams, each "
          "polling its own completion queue. 1 gives the lowest latency (no "
          "event is handed between threads); more use more cores.");

ABSL_FLAG(int64_t, poll_us, tessera::kDefaultPollWindowUs,
          "Each event loop polls for its next event up to this many "
          "microseconds before it sleeps, while events come within this "
          "window of each other: it saves the wake-up of a sleeping core "
          "(about 100 us on a VM) at the cost of a busy core while it polls. "
          "0: loops sleep at once. See docs/benchmarks.md.");
ABSL_FLAG(double, poll_idle_percent, tessera::kDefaultPollIdlePercent,
          "Polls that find nothing may take at most this percent of a "
          "loop's wall time per second; then it sleeps at once until the "
          "next second (bounds the polling's cost when traffic is sparse). "
          "100: no bound; 0: no polling.");

namespace {

// Tokens and TLS material, read once here.
absl::Status SecurityFromFlags(tessera::FrontendServer::Options* options) {
  if (!absl::GetFlag(FLAGS_admin_token_file).empty()) {
    ASSIGN_OR_RETURN(
        options->admin_secret,
        tessera::SharedSecret::FromFile(absl::GetFlag(FLAGS_admin_token_file)));
  }
  if (!absl::GetFlag(FLAGS_cluster_token_file).empty()) {
    ASSIGN_OR_RETURN(options->cluster_secret,
                     tessera::SharedSecret::FromFile(
                         absl::GetFlag(FLAGS_cluster_token_file)));
  }
  ASSIGN_OR_RETURN(options->tls, tessera::TlsConfig::Load(
                                     {absl::GetFlag(FLAGS_tls_cert_file),
                                      absl::GetFlag(FLAGS_tls_key_file),
                                      absl::GetFlag(FLAGS_tls_ca_file)}));
  return absl::OkStatus();
}

// --config, then the flags that override it: --policy and --backends.
absl::Status ConfigFromFlags(tessera::FrontendConfig* config) {
  if (absl::GetFlag(FLAGS_config).empty()) {
    return absl::InvalidArgumentError("--config is required (see --help)");
  }
  RETURN_IF_ERROR(tessera::ReadTextProto(absl::GetFlag(FLAGS_config), config));
  if (!absl::GetFlag(FLAGS_policy).empty()) {
    config->set_policy(absl::GetFlag(FLAGS_policy));
  }
  if (absl::GetFlag(FLAGS_backends).empty()) return absl::OkStatus();
  config->clear_backends();
  for (absl::string_view entry :
       absl::StrSplit(absl::GetFlag(FLAGS_backends), ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, '=');
    if (kv.first.empty() || kv.second.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--backends: '", entry, "' is not id=host:port"));
    }
    tessera::BackendEndpoint* b = config->add_backends();
    b->set_id(kv.first);
    b->set_address(kv.second);
  }
  return absl::OkStatus();
}

// What the frontend holds at once before it refuses calls.
absl::StatusOr<tessera::AdmissionControl::Options> AdmissionFromFlags() {
  tessera::AdmissionControl::Options admission;
  admission.max_requests = absl::GetFlag(FLAGS_max_inflight_calls);
  admission.max_requests_per_model =
      absl::GetFlag(FLAGS_max_inflight_calls_per_model);
  admission.max_bytes = absl::GetFlag(FLAGS_max_inflight_mb) << 20;
  if (admission.max_requests < 0 || admission.max_requests_per_model < 0 ||
      admission.max_bytes < 0) {
    return absl::InvalidArgumentError(
        "--max_inflight_calls, --max_inflight_calls_per_model and "
        "--max_inflight_mb must be >= 0 (0: no limit)");
  }
  admission.max_backlog_slo_fraction =
      absl::GetFlag(FLAGS_max_backlog_slo_fraction);
  if (!(admission.max_backlog_slo_fraction >= 0)) {
    return absl::InvalidArgumentError(
        "--max_backlog_slo_fraction must be >= 0 (0: never)");
  }
  admission.max_queue_slo_fraction =
      absl::GetFlag(FLAGS_max_queue_slo_fraction);
  if (!(admission.max_queue_slo_fraction >= 0)) {
    return absl::InvalidArgumentError(
        "--max_queue_slo_fraction must be >= 0 (0: never)");
  }
  return admission;
}

absl::StatusOr<tessera::FrontendServer::Options> OptionsFromFlags() {
  tessera::FrontendServer::Options options;
  RETURN_IF_ERROR(ConfigFromFlags(&options.config));
  options.model_repository = absl::GetFlag(FLAGS_model_repository);
  options.listen = absl::GetFlag(FLAGS_listen);
  options.plan_file = absl::GetFlag(FLAGS_plan_file);
  options.drain_timeout = absl::Seconds(absl::GetFlag(FLAGS_drain_s));
  options.http_port = absl::GetFlag(FLAGS_http_port);
  options.admin_listen = absl::GetFlag(FLAGS_admin_listen);
  RETURN_IF_ERROR(SecurityFromFlags(&options));
  options.max_message_bytes = absl::GetFlag(FLAGS_max_message_mb) << 20;
  ASSIGN_OR_RETURN(options.admission, AdmissionFromFlags());
  options.coalesce_stream_answers =
      absl::GetFlag(FLAGS_coalesce_stream_answers);
  options.event_loops = absl::GetFlag(FLAGS_event_loops);
  if (options.event_loops < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--event_loops must be at least 1, not ", options.event_loops));
  }
  ASSIGN_OR_RETURN(options.poll, tessera::MakePollOptions(
                                     absl::GetFlag(FLAGS_poll_us),
                                     absl::GetFlag(FLAGS_poll_idle_percent)));
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // So that the heap trimmer can give a burst back (allocator_tuning.h).
  tessera::RestartWithGlibcTunable(argv, tessera::kFrontendGlibcTunable);
  tessera::KeepOneHeapArena();
  tessera::TuneAllocatorForLargeMessages();
  tessera::SetUsage(
      "Tessera frontend: KServe v2 gRPC inference server that places models "
      "on GPU partitions (gpulets) with a scheduling policy.\n"
      "Scheduling policies: " +
      absl::StrJoin(tessera::PolicyRegistry::Names(), ", ") +
      "\nExample: tessera_frontend --config=configs/local_cpu.pbtxt "
      "--model_repository=models\n"
      "Environment: at startup the frontend restarts itself (same pid) with "
      "GLIBC_TUNABLES=glibc.malloc.tcache_count=0 added, unless "
      "GLIBC_TUNABLES already sets tcache_count (docs/live-serving.md, "
      "Overload).");
  absl::ParseCommandLine(argc, argv);
  // absl's lock-order (deadlock) detection costs graph bookkeeping on every
  // lock on the serving path; the tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  tessera::BlockTerminationSignals();
  spdlog::set_pattern("[%H:%M:%S.%e] [frontend] [%l] %v");

  auto options = OptionsFromFlags();
  if (!options.ok()) {
    spdlog::error("{}", std::string(options.status().message()));
    return 2;
  }
  auto server = tessera::FrontendServer::Create(*std::move(options));
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 2;
  }
  if (absl::Status s = (*server)->Start(); !s.ok()) {
    spdlog::error("{}", s.ToString());
    return 2;
  }
  for (const auto& [path, port] :
       {std::pair{absl::GetFlag(FLAGS_port_file), (*server)->port()},
        std::pair{absl::GetFlag(FLAGS_http_port_file), (*server)->http_port()},
        std::pair{absl::GetFlag(FLAGS_admin_port_file),
                  (*server)->admin_port()}}) {
    if (path.empty()) continue;
    std::ofstream(path + ".tmp") << port << "\n";
    std::filesystem::rename(path + ".tmp", path);
  }
  tessera::WaitForTerminationSignal();
  spdlog::info("shutting down");
  (*server)->Shutdown();
  return 0;
}
