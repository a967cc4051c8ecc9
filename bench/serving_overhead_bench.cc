// Serving-path overhead benchmark (prints a table; asserts nothing).
//
// For each model at batch 1 it measures, in one run:
//  * the one-hop floor: a bare gRPC echo of the same request payload on
//    loopback (KServe ModelInfer echoing its input bytes), alternating
//    with the end-to-end requests so both see the same machine;
//  * end-to-end latency through frontend -> backend -> proxy, and the
//    proxy's own execution time, from which the serving-path overhead
//    (end-to-end minus execution) and a per-hop breakdown follow (from the
//    timing parameters every Tessera response carries);
//  * the CPU time and thread switches each process (echo server, frontend,
//    backend, proxy) spends per request;
//  * the same model run in this process with the proxy's own runner
//    (TorchModelRunner) on the same core, to compare execution: back to
//    back, paced, after an echo call each, and alternating request by
//    request with the end-to-end calls (both then see the same machine);
//    alternating too, on a second proxy process the benchmark starts
//    itself, so a gap any separate process shows is told from the serving
//    path's.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/echo_server.h"
#include "bench/in_process_model.h"
#include "bench/overhead_probes.h"
#include "bench/overhead_report.h"
#include "common/allocator_tuning.h"
#include "common/cpu_affinity.h"
#include "common/model_repository.h"
#include "common/percentile.h"
#include "common/poll_governor.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/usage.h"
#include "grpcpp/grpcpp.h"
#include "tests/integration/local_cluster.h"

ABSL_FLAG(int, iterations, 300, "Timed requests per model and path.");
ABSL_FLAG(int, warmup, 30, "Untimed requests before each measurement.");
ABSL_FLAG(std::string, models, "lenet,resnet18", "Models to measure.");
ABSL_FLAG(std::string, bin_dir, TESSERA_BIN_DIR, "Tessera binaries.");
ABSL_FLAG(std::string, model_repository, TESSERA_MODEL_DIR,
          "Model repository.");
ABSL_FLAG(bool, echo_sync, false,
          "Diagnostic: the echo server uses gRPC's synchronous API instead "
          "of the callback API (the default).");
ABSL_FLAG(bool, echo_async, false,
          "Diagnostic: the echo server uses gRPC's asynchronous API with one "
          "thread polling one completion queue (as the frontend and the "
          "backend serve).");
ABSL_FLAG(bool, echo_handoff, false,
          "Diagnostic: the echo server finishes calls from another thread.");
ABSL_FLAG(int64_t, proxy_poll_us, tessera::kDefaultPollWindowUs,
          "The backend's --proxy_poll_us: the proxies poll for their next "
          "batch up to this long before they sleep (0: they sleep at once).");
ABSL_FLAG(int64_t, poll_us, tessera::kDefaultPollWindowUs,
          "The frontend's and the backend's --poll_us: their event loops "
          "poll for their next event up to this long before they sleep (0: "
          "they sleep at once).");
ABSL_FLAG(double, poll_idle_percent, tessera::kDefaultPollIdlePercent,
          "The frontend's and the backend's --poll_idle_percent (and the "
          "echo server's, with --echo_poll_us).");
ABSL_FLAG(int64_t, echo_poll_us, 0,
          "Diagnostic, with --echo_async: the echo server's loop polls for "
          "its next call this long before it sleeps, as the serving loops "
          "do with --poll_us (a like-for-like floor for them).");
ABSL_FLAG(std::string, serving_cores, "",
          "Cores kept for the serving processes (client, echo server, "
          "frontend, backend), e.g. \"0\"; the backend's cpu device gets the "
          "others. Empty: every process may use every core (the default, as "
          "on a machine without reserved cores).");
ABSL_FLAG(std::string, client_core, "last",
          "Where the benchmark's client runs: a core number, \"last\" (the "
          "last core this process may use) or \"none\". The echo server, "
          "the frontend and the backend then start on the other cores, so "
          "that the echo and the client -> frontend hop both cross cores, as "
          "between machines (proxies keep their gpulets' cores). \"none\": "
          "no pinning; the scheduler then puts each hop on one core or across "
          "two, differently from run to run, and the ratios swing with it.");
ABSL_FLAG(bool, reference_proxy, true,
          "In the alternating exec comparison, also run each model on a "
          "second proxy process that this benchmark starts itself (the same "
          "binary, cores, threads, polling and warm-up as the cluster's "
          "proxy, no backend daemon in between), every third request: it "
          "tells a gap that any separate process shows from one the serving "
          "path causes.");
ABSL_FLAG(std::string, serve_echo, "",
          "Internal: serve the echo service and write its port to this file "
          "(the benchmark runs itself this way so the one-hop floor crosses "
          "processes, as client -> frontend does).");

namespace tessera {
namespace {

using Results = std::map<std::string, ModelOverhead>;
using Stub = inference::GRPCInferenceService::Stub;

// What every number rests on: a wake-up's cost and the polling settings.
void PrintMachineContext(const absl::StatusOr<std::vector<int>>& allowed) {
  if (allowed.ok() && !allowed->empty()) {
    const int a = allowed->front(), b = allowed->back();
    std::printf(
        "Wake-up cost of this machine: round trip to an idle process after "
        "1 ms, p50: %.0f us on one core, %s\n",
        WakeRoundTripUs(a, a),
        a == b
            ? "(one core only)"
            : absl::StrFormat("%.0f us across two cores", WakeRoundTripUs(a, b))
                  .c_str());
  }
  std::printf(
      "Proxies poll for their next batch for %lld us before they sleep "
      "(--proxy_poll_us); the frontend's and the backend's event loops for "
      "%lld us (--poll_us), polls finding nothing at most %g%% of the time "
      "(--poll_idle_percent)%s.\n",
      static_cast<long long>(absl::GetFlag(FLAGS_proxy_poll_us)),
      static_cast<long long>(absl::GetFlag(FLAGS_poll_us)),
      absl::GetFlag(FLAGS_poll_idle_percent),
      absl::GetFlag(FLAGS_echo_poll_us) > 0
          ? absl::StrFormat(
                "; the echo server's loop for %lld us",
                static_cast<long long>(absl::GetFlag(FLAGS_echo_poll_us)))
                .c_str()
          : "");
}

// Where the processes run: the client's core (-1: not pinned), the
// servers' cores, and the backend's flags (with a --config whose cpu device
// has the cores left to the gpulets, when they are set).
struct CoreLayout {
  int client_core = -1;
  std::vector<int> server_cores;
  std::vector<std::string> backend_flags;

  // Runs `start` with this thread on the servers' cores (the processes it
  // starts inherit them), then pins it back to the client's core.
  template <typename Start>
  auto OnServerCores(Start start) const {
    if (client_core >= 0) (void)SetCpuAffinity(server_cores);
    auto result = start();
    if (client_core >= 0) (void)SetCpuAffinity({client_core});
    return result;
  }
};

// Gives the backend a config at `path` whose cpu device has `cores`.
void UseDeviceCores(const std::vector<int>& cores, const std::string& path,
                    CoreLayout* layout) {
  std::string device =
      "id: \"backend0\" devices { id: \"cpu0\" kind: DEVICE_KIND_CPU";
  for (int c : cores) absl::StrAppend(&device, " cpu_cores: ", c);
  device += " }";
  std::ofstream(path) << device;
  layout->backend_flags.push_back("--config=" + path);
}

// --serving_cores: this process (and so every process it starts) runs on
// them, the backend's cpu device on the rest.
absl::Status ReserveServingCores(const std::vector<int>& allowed,
                                 size_t gpulets,
                                 const std::string& backend_config,
                                 CoreLayout* layout) {
  ASSIGN_OR_RETURN(const std::vector<int> serving,
                   ParseCoreList(absl::GetFlag(FLAGS_serving_cores)));
  std::vector<int> device_cores;
  for (int c : allowed) {
    if (std::find(serving.begin(), serving.end(), c) == serving.end()) {
      device_cores.push_back(c);
    }
  }
  if (device_cores.size() < gpulets) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "it leaves %d core(s) for the device, fewer than the %zu gpulets "
        "(one per model) need",
        static_cast<int>(device_cores.size()), gpulets));
  }
  RETURN_IF_ERROR(SetCpuAffinity(serving));
  UseDeviceCores(device_cores, backend_config, layout);
  std::printf("Serving processes on cores %s, the cpu device on the rest\n",
              absl::GetFlag(FLAGS_serving_cores).c_str());
  return absl::OkStatus();
}

// The cores of the run (--serving_cores, --client_core); writes the
// backend's config to `backend_config` when it sets the device's cores.
absl::StatusOr<CoreLayout> ArrangeCores(
    const absl::StatusOr<std::vector<int>>& allowed, size_t gpulets,
    const std::string& backend_config) {
  CoreLayout layout;
  layout.backend_flags = {
      absl::StrCat("--proxy_poll_us=", absl::GetFlag(FLAGS_proxy_poll_us)),
      absl::StrCat("--poll_us=", absl::GetFlag(FLAGS_poll_us)),
      absl::StrCat("--poll_idle_percent=",
                   absl::GetFlag(FLAGS_poll_idle_percent))};
  if (!absl::GetFlag(FLAGS_serving_cores).empty()) {
    if (!allowed.ok()) return allowed.status();
    if (absl::Status s =
            ReserveServingCores(*allowed, gpulets, backend_config, &layout);
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--serving_cores: ", s.message()));
    }
  }
  // A pinned client: the servers start on the other cores (children
  // inherit the affinity of the thread that starts them).
  auto mine = GetCpuAffinity(0);
  auto chosen = ClientCore(absl::GetFlag(FLAGS_client_core),
                           mine.ok() ? *mine : std::vector<int>{});
  if (!chosen.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--client_core: ", chosen.status().message()));
  }
  layout.client_core = *chosen;
  if (layout.client_core >= 0) {
    for (int c : *mine) {
      if (c != layout.client_core) layout.server_cores.push_back(c);
    }
    std::printf(
        "Client on core %d, echo server, frontend and backend on "
        "cores %s\n",
        layout.client_core, FormatCoreList(layout.server_cores).c_str());
    // The backend's cpu device keeps this process's cores (it would take
    // only the servers' cores it inherits).
    if (absl::GetFlag(FLAGS_serving_cores).empty()) {
      UseDeviceCores(*mine, backend_config, &layout);
    }
  } else if (absl::GetFlag(FLAGS_client_core) != "none") {
    std::printf("One core: the client is not pinned\n");
  }
  return layout;
}

// The one-hop floor's server: this binary with --serve_echo, in a process
// of its own on the servers' cores.
struct EchoProcess {
  std::unique_ptr<Subprocess> process;
  std::unique_ptr<Stub> stub;
};

absl::StatusOr<EchoProcess> StartEcho(const CoreLayout& layout) {
  const std::string port_file =
      absl::StrCat("/tmp/tessera_bench_echo_", getpid(), ".port");
  Subprocess::Options options;
  options.argv = {
      std::filesystem::read_symlink("/proc/self/exe"),
      "--serve_echo=" + port_file,
      absl::StrCat("--echo_handoff=", absl::GetFlag(FLAGS_echo_handoff)),
      absl::StrCat("--echo_sync=", absl::GetFlag(FLAGS_echo_sync)),
      absl::StrCat("--echo_async=", absl::GetFlag(FLAGS_echo_async)),
      absl::StrCat("--echo_poll_us=", absl::GetFlag(FLAGS_echo_poll_us)),
      absl::StrCat("--poll_idle_percent=",
                   absl::GetFlag(FLAGS_poll_idle_percent))};
  EchoProcess echo;
  ASSIGN_OR_RETURN(echo.process, layout.OnServerCores([&] {
    return Subprocess::Spawn(options);
  }));
  int port = 0;
  for (int i = 0; i < 500 && port == 0; ++i) {
    std::ifstream(port_file) >> port;
    absl::SleepFor(absl::Milliseconds(10));
  }
  std::remove(port_file.c_str());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  echo.stub = inference::GRPCInferenceService::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                grpc::InsecureChannelCredentials(), args));
  return echo;
}

// Echo calls back to back: the floor with warm caches and busy cores.
void MeasureEchoBackToBack(Stub* echo, const ModelRepository& repo,
                           const std::vector<std::string>& models,
                           Results* results) {
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const int iterations = absl::GetFlag(FLAGS_iterations);
  for (const auto& m : models) {
    std::fprintf(stderr, "echo %s, back to back...\n", m.c_str());
    const auto request = RandomRequest(repo.Find(m)->config);
    (*results)[m].request_bytes = request.raw_input_contents(0).size();
    for (int i = 0; i < warmup + iterations; ++i) {
      double us = 0;
      inference::ModelInferResponse response;
      if (Call(echo, request, &us, &response) && i >= warmup) {
        (*results)[m].floor_b2b.push_back(us);
      }
    }
  }
}

// A static plan with one gpulet (one core) per model.
std::string OneGpuletPerModel(const std::vector<std::string>& models) {
  std::string plan = "devices { backend_id: \"backend0\" device_id: \"cpu0\"";
  const double share = 100.0 / models.size();
  for (const auto& m : models) {
    absl::StrAppend(&plan, " gpulets { gpulet_id: \"", m,
                    "\" share_percent: ", share, " models { model: \"", m,
                    "\" batch_size: 1 } }");
  }
  return plan + " }";
}

// The pid of each model's proxy in `cluster`, and its gpulet's cores.
std::map<std::string, pid_t> FindProxies(testing::LocalCluster& cluster,
                                         const std::vector<std::string>& models,
                                         Results* results) {
  std::map<std::string, pid_t> proxy_pid;
  for (pid_t pid : testing::ChildPids(cluster.backend(0)->pid())) {
    const std::string cmd = testing::CommandLine(pid);
    for (const auto& m : models) {
      if (cmd.find("--gpulet_id=" + m + " ") != std::string::npos ||
          absl::EndsWith(cmd, "--gpulet_id=" + m + " ")) {
        (*results)[m].cores = *GetCpuAffinity(pid);
        proxy_pid[m] = pid;
      }
    }
  }
  return proxy_pid;
}

// Echo and end-to-end calls alternate, so that both see the same machine
// (these VMs drift by ±20 % within minutes); each process's CPU time and
// switches per request are read around the timed calls. False if no
// end-to-end call succeeded.
bool MeasureEndToEnd(const std::string& m,
                     const inference::ModelInferRequest& request, Stub* echo,
                     Stub* cluster,
                     const std::map<std::string, pid_t>& processes,
                     ModelOverhead* r) {
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const int iterations = absl::GetFlag(FLAGS_iterations);
  std::fprintf(stderr, "echo and end-to-end %s, alternating...\n", m.c_str());
  std::map<std::string, ProcessCounters> before;
  int answered = 0;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (i == warmup) {
      for (const auto& [name, pid] : processes) {
        before[name] = ReadCounters(pid);
      }
    }
    double us = 0;
    inference::ModelInferResponse response;
    const bool echo_ok = Call(echo, request, &us, &response);
    if (echo_ok && i >= warmup) r->floor.push_back(us);
    response.Clear();
    if (!Call(cluster, request, &us, &response) || i < warmup) continue;
    ++answered;
    r->e2e.total.push_back(us);
    for (const auto& [k, v] : response.parameters()) {
      r->e2e.params[k].push_back(static_cast<double>(v.int64_param()));
    }
  }
  for (const auto& [name, pid] : processes) {
    r->cost[name] = PerRequest(ReadCounters(pid), before[name], answered);
  }
  if (answered == 0) {
    std::fprintf(stderr, "no end-to-end request for %s succeeded\n", m.c_str());
  }
  return answered > 0;
}

// A second proxy process for `m` on `cores` (the cluster's binary,
// threads, polling and warm-up, no backend in between).
absl::StatusOr<std::unique_ptr<ProxyHandle>> StartReferenceProxy(
    const ModelRepository& repo, const std::string& subset,
    const std::string& m, const std::vector<int>& cores) {
  ProxyHandle::Options po;
  po.proxy_binary = absl::GetFlag(FLAGS_bin_dir) + "/tessera_proxy";
  po.config.set_model_repository(subset);
  po.config.set_gpulet_id(absl::StrCat("bench-reference-", getpid(), "-", m));
  po.config.set_device_id("reference");
  po.config.set_device_kind(DEVICE_KIND_CPU);
  *po.config.add_models() = repo.Find(m)->config;
  for (int c : cores) po.config.add_cpu_cores(c);
  po.config.set_threads(std::max<int>(1, cores.size()));
  SetProxyPoll(*MakePollOptions(absl::GetFlag(FLAGS_proxy_poll_us),
                                absl::GetFlag(FLAGS_poll_idle_percent)),
               &po.config);
  return ProxyHandle::Start(po);
}

// The proxy's exec against the same runner in this process, request by
// request: an end-to-end call, then one reference run in turn (the
// in-process runner on the proxy's cores while the proxy idles, its copy,
// the second proxy), so that both see the same minute of a machine whose
// speed drifts. False if a reference cannot start.
bool MeasureExecAgainstReferences(const ModelRepository& repo,
                                  const std::string& subset,
                                  const std::string& m,
                                  const inference::ModelInferRequest& request,
                                  Stub* cluster, ModelOverhead* r) {
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const int iterations = absl::GetFlag(FLAGS_iterations);
  std::fprintf(stderr, "end-to-end and in-process %s, alternating...\n",
               m.c_str());
  const auto home = GetCpuAffinity(0);
  auto model = InProcessModel::Create(repo, m, r->cores.size());
  auto copy = InProcessModel::Create(repo, m, r->cores.size());
  if (model == nullptr || copy == nullptr || !home.ok()) return false;
  std::unique_ptr<ProxyHandle> second;
  if (absl::GetFlag(FLAGS_reference_proxy)) {
    auto started = StartReferenceProxy(repo, subset, m, r->cores);
    if (!started.ok()) {
      std::fprintf(stderr, "second proxy for %s: %s\n", m.c_str(),
                   started.status().ToString().c_str());
      return false;
    }
    second = std::move(*started);
  }
  const BatchRequest second_batch = ToBatchRequest(m, request);
  const int turns = second != nullptr ? 3 : 2;
  for (int i = 0; i < warmup + iterations; ++i) {
    double us = 0;
    inference::ModelInferResponse response;
    if (!Call(cluster, request, &us, &response)) continue;
    const int turn = i % turns;
    double exec = -1;
    if (turn == 2) {
      exec = RunOn(second.get(), second_batch);
    } else {
      if (!r->cores.empty()) (void)SetCpuAffinity(r->cores);
      exec = turn == 1 ? copy->Run() : model->Run();
      (void)SetCpuAffinity(*home);
    }
    auto it = response.parameters().find("tessera.exec_us");
    if (i < warmup || exec < 0 || it == response.parameters().end()) continue;
    if (turn == 1) {
      r->exec_alt.copy.push_back(exec);
    } else if (turn == 2) {
      r->exec_alt.second.push_back(exec);
    } else {
      r->exec_alt.proxy.push_back(
          static_cast<double>(it->second.int64_param()));
      r->exec_alt.in_process.push_back(exec);
    }
  }
  return true;
}

// End to end through a local cluster with one gpulet (one core) per model.
bool MeasureCluster(const ModelRepository& repo, const std::string& subset,
                    const std::vector<std::string>& models,
                    const CoreLayout& layout, const EchoProcess& echo,
                    Results* results) {
  testing::LocalCluster::Options options;
  options.bin_dir = absl::GetFlag(FLAGS_bin_dir);
  options.model_repository = subset;
  options.static_plan = OneGpuletPerModel(models);
  options.extra_backend_flags = layout.backend_flags;
  options.extra_frontend_flags = {
      absl::StrCat("--poll_us=", absl::GetFlag(FLAGS_poll_us)),
      absl::StrCat("--poll_idle_percent=",
                   absl::GetFlag(FLAGS_poll_idle_percent))};
  auto cluster = layout.OnServerCores(
      [&] { return testing::LocalCluster::Start(options); });
  if (!cluster.ok()) {
    std::fprintf(stderr, "%s\n", cluster.status().ToString().c_str());
    return false;
  }
  const std::map<std::string, pid_t> proxy_pid =
      FindProxies(**cluster, models, results);
  auto stub = (*cluster)->NewStub();
  for (const auto& m : models) {
    const auto request = RandomRequest(repo.Find(m)->config);
    const std::map<std::string, pid_t> processes = {
        {"echo server", echo.process->pid()},
        {"frontend", (*cluster)->frontend()->pid()},
        {"backend", (*cluster)->backend(0)->pid()},
        {"proxy", proxy_pid.count(m) > 0 ? proxy_pid.at(m) : 0}};
    ModelOverhead* r = &(*results)[m];
    if (!MeasureEndToEnd(m, request, echo.stub.get(), stub.get(), processes,
                         r) ||
        !MeasureExecAgainstReferences(repo, subset, m, request, stub.get(),
                                      r)) {
      return false;
    }
  }
  return true;
}

// In-process execution with the proxy's runner on the same core: back to
// back; paced (idle between runs for about the measured overhead, as the
// proxy is between sequential requests: caches go cold); and alternating
// with an echo call (between runs, gRPC work of the client and the echo
// server runs on the machine's cores, as the frontend's and backend's
// threads run on the proxy's core between its requests).
bool MeasureInProcess(const ModelRepository& repo,
                      const std::vector<std::string>& models, Stub* echo,
                      Results* results) {
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const int iterations = absl::GetFlag(FLAGS_iterations);
  for (const auto& m : models) {
    ModelOverhead& r = (*results)[m];
    if (!r.cores.empty()) (void)SetCpuAffinity(r.cores);
    auto model = InProcessModel::Create(repo, m, r.cores.size());
    if (model == nullptr) return false;
    const auto request = RandomRequest(repo.Find(m)->config);
    const absl::Duration gap =
        absl::Microseconds(Percentile(r.e2e.total, .5) -
                           Percentile(r.e2e.params.at("tessera.exec_us"), .5));
    for (Samples* samples : {&r.inproc, &r.paced, &r.with_echo}) {
      for (int i = 0; i < warmup + iterations; ++i) {
        if (samples == &r.paced) absl::SleepFor(gap);
        if (samples == &r.with_echo) {
          double us = 0;
          inference::ModelInferResponse response;
          (void)Call(echo, request, &us, &response);
        }
        const double exec = model->Run();
        if (exec >= 0 && i >= warmup) samples->push_back(exec);
      }
    }
  }
  return true;
}

int Run() {
  const std::vector<std::string> models =
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',');
  auto repo = ModelRepository::Load(absl::GetFlag(FLAGS_model_repository));
  if (!repo.ok()) {
    std::fprintf(stderr, "%s\n", repo.status().ToString().c_str());
    return 1;
  }
  const auto allowed = GetCpuAffinity(0);
  PrintMachineContext(allowed);
  const std::string backend_config =
      absl::StrCat("/tmp/tessera_bench_backend_", getpid(), ".pbtxt");
  absl::Cleanup remove_backend_config = [&backend_config] {
    std::remove(backend_config.c_str());
  };
  auto layout = ArrangeCores(allowed, models.size(), backend_config);
  if (!layout.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(layout.status().message()).c_str());
    return 1;
  }
  auto echo = StartEcho(*layout);
  if (!echo.ok()) return 1;
  Results results;
  MeasureEchoBackToBack(echo->stub.get(), **repo, models, &results);
  const std::string dir = absl::StrCat("/tmp/tessera_bench_repo_", getpid());
  absl::Cleanup remove_dir = [&dir] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  auto subset = testing::MakeSubsetRepository(
      absl::GetFlag(FLAGS_model_repository), models, dir);
  if (!subset.ok() ||
      !MeasureCluster(**repo, *subset, models, *layout, *echo, &results) ||
      !MeasureInProcess(**repo, models, echo->stub.get(), &results)) {
    return 1;
  }
  echo->process->Stop(absl::Seconds(5));
  PrintOverheadReport(models, results, absl::GetFlag(FLAGS_iterations));
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::TuneAllocatorForLargeMessages();
  tessera::SetUsage(
      "Serving-path overhead benchmark: one-hop gRPC echo floor vs end-to-end "
      "latency through a local Tessera cluster, and proxy execution vs "
      "in-process LibTorch. Prints tables.");
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_echo_poll_us) < 0 ||
      (absl::GetFlag(FLAGS_echo_poll_us) > 0 &&
       !absl::GetFlag(FLAGS_echo_async))) {
    std::fprintf(stderr, "--echo_poll_us needs --echo_async and >= 0\n");
    return 2;
  }
  for (int64_t window_us :
       {absl::GetFlag(FLAGS_poll_us), absl::GetFlag(FLAGS_proxy_poll_us)}) {
    auto poll = tessera::MakePollOptions(
        window_us, absl::GetFlag(FLAGS_poll_idle_percent));
    if (!poll.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(poll.status().message()).c_str());
      return 2;
    }
  }
  if (!absl::GetFlag(FLAGS_serve_echo).empty()) {
    tessera::EchoServerOptions echo;
    echo.handoff = absl::GetFlag(FLAGS_echo_handoff);
    echo.sync = absl::GetFlag(FLAGS_echo_sync);
    echo.async = absl::GetFlag(FLAGS_echo_async);
    echo.poll =
        *tessera::MakePollOptions(absl::GetFlag(FLAGS_echo_poll_us),
                                  absl::GetFlag(FLAGS_poll_idle_percent));
    return tessera::ServeEcho(absl::GetFlag(FLAGS_serve_echo), echo);
  }
  return tessera::Run();
}
