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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "backend/proxy_handle.h"
#include "common/allocator_tuning.h"
#include "common/async_call.h"
#include "common/cpu_affinity.h"
#include "common/data_type.h"
#include "common/grpc_tuning.h"
#include "common/model_repository.h"
#include "common/percentile.h"
#include "common/poll_governor.h"
#include "common/subprocess.h"
#include "common/tensor_layout.h"
#include "common/termination_signals.h"
#include "common/usage.h"
#include "grpcpp/grpcpp.h"
#include "proxy/torch_model_runner.h"
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

using Samples = std::vector<double>;  // microseconds

// Echoes the first raw input back as the first raw output. With
// `handoff`, the call is finished from another thread (as the frontend
// finishes calls from its backend-stream reader thread), to measure what
// that hand-off alone costs.
class EchoService final
    : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit EchoService(bool handoff) : handoff_(handoff) {
    if (handoff_) thread_ = std::thread([this] { Loop(); });
  }
  ~EchoService() override {
    if (handoff_) {
      {
        absl::MutexLock lock(&mu_);
        stop_ = true;
      }
      thread_.join();
    }
  }

  grpc::ServerUnaryReactor* ModelInfer(
      grpc::CallbackServerContext* context,
      const inference::ModelInferRequest* request,
      inference::ModelInferResponse* response) override {
    *response->add_raw_output_contents() = request->raw_input_contents(0);
    auto* reactor = context->DefaultReactor();
    if (handoff_) {
      absl::MutexLock lock(&mu_);
      pending_.push_back(reactor);
    } else {
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }

 private:
  void Loop() {
    while (true) {
      std::vector<grpc::ServerUnaryReactor*> ready;
      {
        absl::MutexLock lock(&mu_);
        auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stop_ || !pending_.empty();
        };
        mu_.Await(absl::Condition(&wake));
        if (stop_) return;
        ready.swap(pending_);
      }
      for (auto* r : ready) r->Finish(grpc::Status::OK);
    }
  }

  const bool handoff_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<grpc::ServerUnaryReactor*> pending_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// The same echo on gRPC's synchronous server API.
class SyncEchoService final : public inference::GRPCInferenceService::Service {
 public:
  grpc::Status ModelInfer(grpc::ServerContext*,
                          const inference::ModelInferRequest* request,
                          inference::ModelInferResponse* response) override {
    *response->add_raw_output_contents() = request->raw_input_contents(0);
    return grpc::Status::OK;
  }
};

// The same echo on gRPC's asynchronous API, driven by one thread that
// polls a single completion queue and answers inline: no other thread of
// the process waits in gRPC's poller, so no event is handed between
// threads.
class AsyncEcho {
 public:
  AsyncEcho(inference::GRPCInferenceService::AsyncService* service,
            grpc::ServerCompletionQueue* cq)
      : service_(service), cq_(cq) {}

  void Run(const PollOptions& poll) {
    new Call(service_, cq_);
    RunCompletionQueue(cq_, poll);
  }

 private:
  class Call final : public AsyncTag {
   public:
    Call(inference::GRPCInferenceService::AsyncService* service,
         grpc::ServerCompletionQueue* cq)
        : service_(service), cq_(cq), responder_(&context_) {
      service_->RequestModelInfer(&context_, &request_, &responder_, cq_, cq_,
                                  this);
    }
    void Proceed(bool ok) override {
      if (finishing_ || !ok) {
        delete this;
        return;
      }
      new Call(service_, cq_);  // the next call
      *response_.add_raw_output_contents() = request_.raw_input_contents(0);
      finishing_ = true;
      responder_.Finish(response_, grpc::Status::OK, this);
    }

   private:
    inference::GRPCInferenceService::AsyncService* service_;
    grpc::ServerCompletionQueue* cq_;
    grpc::ServerContext context_;
    inference::ModelInferRequest request_;
    inference::ModelInferResponse response_;
    grpc::ServerAsyncResponseWriter<inference::ModelInferResponse> responder_;
    bool finishing_ = false;
  };

  inference::GRPCInferenceService::AsyncService* service_;
  grpc::ServerCompletionQueue* cq_;
};

int ServeEcho(const std::string& port_file) {
  BlockTerminationSignals();
  EchoService echo(absl::GetFlag(FLAGS_echo_handoff));
  SyncEchoService sync_echo;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.SetMaxReceiveMessageSize(-1);
  // The floor gets the transport settings the serving path has.
  ApplyTransportTuning(&builder);
  inference::GRPCInferenceService::AsyncService async_echo;
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  const bool async = absl::GetFlag(FLAGS_echo_async);
  if (async) {
    builder.RegisterService(&async_echo);
    cq = builder.AddCompletionQueue();
  } else if (absl::GetFlag(FLAGS_echo_sync)) {
    builder.RegisterService(&sync_echo);
  } else {
    builder.RegisterService(&echo);
  }
  auto server = builder.BuildAndStart();
  if (server == nullptr) return 1;
  std::thread loop;
  if (async) {
    loop = std::thread([&] {
      AsyncEcho(&async_echo, cq.get())
          .Run(*MakePollOptions(absl::GetFlag(FLAGS_echo_poll_us),
                                absl::GetFlag(FLAGS_poll_idle_percent)));
    });
  }
  std::ofstream(port_file + ".tmp") << port << "\n";
  std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  WaitForTerminationSignal();
  server->Shutdown();
  if (async) {
    cq->Shutdown();
    loop.join();
  }
  return 0;
}

inference::ModelInferRequest RandomRequest(const ModelConfig& config) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist;
  inference::ModelInferRequest request;
  request.set_model_name(config.name());
  for (const TensorConfig& t : config.input()) {
    auto* in = request.add_inputs();
    in->set_name(t.name());
    in->set_datatype(DataTypeWireName(t.data_type()));
    std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
    shape[0] = 1;
    for (int64_t d : shape) in->add_shape(d);
    std::string* raw = request.add_raw_input_contents();
    raw->resize(ElementCount(shape) * DataTypeSize(t.data_type()));
    float* p = reinterpret_cast<float*>(raw->data());
    for (size_t i = 0; i < raw->size() / 4; ++i) p[i] = dist(rng);
  }
  return request;
}

// The proxy's runner for one model in this process, on a batch-1 request
// like the benchmark's.
class InProcessModel {
 public:
  static std::unique_ptr<InProcessModel> Create(const ModelRepository& repo,
                                                const std::string& model,
                                                int threads) {
    const ModelConfig& config = repo.Find(model)->config;
    TorchModelRunner::Options options;
    options.num_threads = std::max(1, threads);
    auto runner = TorchModelRunner::Create({{model, repo.ModelPath(model, 1)}},
                                           {{model, config}}, options);
    if (!runner.ok()) {
      std::fprintf(stderr, "%s\n", runner.status().ToString().c_str());
      return nullptr;
    }
    std::unique_ptr<InProcessModel> m(new InProcessModel());
    m->runner_ = std::move(*runner);
    m->model_ = model;
    m->request_ = RandomRequest(config);
    for (int i = 0; i < config.input_size(); ++i) {
      TensorView v;
      v.name = config.input(i).name();
      v.data_type = config.input(i).data_type();
      v.shape.assign(m->request_.inputs(i).shape().begin(),
                     m->request_.inputs(i).shape().end());
      v.data = reinterpret_cast<uint8_t*>(
          m->request_.mutable_raw_input_contents(i)->data());
      v.size_bytes = m->request_.raw_input_contents(i).size();
      m->inputs_.push_back(v);
    }
    m->out_.resize(1 << 20);
    // Warm up as the proxy does (ProxyServer::Warmup: batch 1, then the
    // largest batch, four runs each), so that both start timing from the
    // same history (allocator state, the shapes TorchScript has seen).
    std::vector<int> sizes = {1};
    if (config.max_batch_size() > 1) sizes.push_back(config.max_batch_size());
    for (int b : sizes) {
      std::vector<uint8_t> in(TensorLayoutBytes(config.input(), b), 0);
      auto zeros = LayOutTensors(config.input(), b, in.data(), in.size());
      if (!zeros.ok()) return nullptr;
      std::vector<uint8_t> out(64 << 20);
      for (int i = 0; i < 4; ++i) {
        absl::Duration exec;
        (void)m->runner_->Run(model, *zeros, out.data(), out.size(), &exec);
      }
    }
    return m;
  }

  // One run: its execution time (us) as the proxy measures it, or -1.
  double Run() {
    absl::Duration exec;
    auto outputs =
        runner_->Run(model_, inputs_, out_.data(), out_.size(), &exec);
    return outputs.ok() ? absl::ToDoubleMicroseconds(exec) : -1;
  }

 private:
  InProcessModel() = default;
  std::unique_ptr<TorchModelRunner> runner_;
  std::string model_;
  inference::ModelInferRequest request_;  // inputs_ point into it
  std::vector<TensorView> inputs_;
  std::vector<uint8_t> out_;
};

// `request`'s inputs as a batch for a proxy.
BatchRequest ToBatchRequest(const std::string& model,
                            const inference::ModelInferRequest& request) {
  BatchRequest batch;
  batch.set_model(model);
  for (int i = 0; i < request.inputs_size(); ++i) {
    Tensor* t = batch.add_inputs();
    t->set_name(request.inputs(i).name());
    t->set_data_type(*DataTypeFromWireName(request.inputs(i).datatype()));
    *t->mutable_shape() = request.inputs(i).shape();
    t->set_data(request.raw_input_contents(i));
  }
  return batch;
}

// Runs `batch` on `proxy` and waits; the proxy's exec time (us), or -1.
double RunOn(ProxyHandle* proxy, BatchRequest batch) {
  auto response = proxy->ExecuteAndWait(std::move(batch), absl::Seconds(60));
  if (!response.ok()) {
    std::fprintf(stderr, "second proxy: %s\n",
                 response.status().ToString().c_str());
    std::exit(1);
  }
  return response->status().code() == 0
             ? static_cast<double>(response->exec_time_us())
             : -1;
}

struct Timed {
  Samples total;
  std::map<std::string, Samples> params;
};

// One timed call; false if it failed (reported on stderr).
bool Call(inference::GRPCInferenceService::Stub* stub,
          const inference::ModelInferRequest& request, double* us,
          inference::ModelInferResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  const absl::Time start = absl::Now();
  grpc::Status s = stub->ModelInfer(&context, request, response);
  *us = absl::ToDoubleMicroseconds(absl::Now() - start);
  if (!s.ok()) {
    std::fprintf(stderr, "request failed: %s\n", s.error_message().c_str());
  }
  return s.ok();
}

// CPU time and thread switches of a process so far, summed over its live
// threads (/proc/<pid>/task/*/schedstat and status).
struct ProcessCounters {
  double cpu_us = 0;
  double switches = 0;
};

ProcessCounters ReadCounters(pid_t pid) {
  ProcessCounters c;
  for (const auto& [tid, name] : testing::ThreadNames(pid)) {
    const testing::ThreadCounters t = testing::ReadThreadCounters(pid, tid);
    if (t.on_cpu_ns > 0) c.cpu_us += t.on_cpu_ns / 1e3;
    if (t.voluntary_switches > 0) c.switches += t.voluntary_switches;
    if (t.involuntary_switches > 0) c.switches += t.involuntary_switches;
  }
  return c;
}

Samples Difference(const Samples& a, const Samples& b) {
  Samples d;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d.push_back(a[i] - b[i]);
  }
  return d;
}

// Round trip (us, p50 of 500) of a 100-byte message between this thread
// pinned to `client_core` and a child process pinned to `server_core`, with
// 1 ms idle before each, over a local SOCK_SEQPACKET pair: what waking an
// idle thread costs on this machine, on the same core and across cores.
// Returns -1 if the child cannot be started.
double WakeRoundTripUs(int client_core, int server_core) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) != 0) return -1;
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    close(fds[0]);
    (void)SetCpuAffinity({server_core});
    char buffer[256];
    ssize_t n;
    while ((n = recv(fds[1], buffer, sizeof(buffer), 0)) > 0) {
      if (send(fds[1], buffer, n, 0) != n) break;
    }
    _exit(0);
  }
  close(fds[1]);
  auto mine = GetCpuAffinity(0);
  (void)SetCpuAffinity({client_core});
  char buffer[256] = {};
  Samples rtt;
  for (int i = 0; i < 550; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
    const absl::Time start = absl::Now();
    if (send(fds[0], buffer, 100, 0) != 100 ||
        recv(fds[0], buffer, sizeof(buffer), 0) <= 0) {
      break;
    }
    if (i >= 50) rtt.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  close(fds[0]);
  waitpid(child, nullptr, 0);
  if (mine.ok()) (void)SetCpuAffinity(*mine);
  return rtt.empty() ? -1 : Percentile(rtt, .5);
}

// The core --client_core names among `cores` (this process's), or -1 for
// no pinning ("none", or "last" on a single core).
absl::StatusOr<int> ClientCore(const std::string& flag,
                               const std::vector<int>& cores) {
  if (flag == "none") return -1;
  if (flag == "last") return cores.size() < 2 ? -1 : cores.back();
  int core = -1;
  if (!absl::SimpleAtoi(flag, &core)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", flag, "' is not a core number, \"last\" or \"none\""));
  }
  if (std::find(cores.begin(), cores.end(), core) == cores.end() ||
      cores.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("core ", core, " is not one of this process's cores (",
                     FormatCoreList(cores),
                     ") or leaves no other core for the servers; \"none\" runs "
                     "unpinned"));
  }
  return core;
}

int Run() {
  const int iterations = absl::GetFlag(FLAGS_iterations);
  const int warmup = absl::GetFlag(FLAGS_warmup);
  const std::vector<std::string> models =
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',');
  auto repo = ModelRepository::Load(absl::GetFlag(FLAGS_model_repository));
  if (!repo.ok()) {
    std::fprintf(stderr, "%s\n", repo.status().ToString().c_str());
    return 1;
  }

  // 0. What a wake-up costs here (context for every number below).
  auto allowed = GetCpuAffinity(0);
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

  // Reserved serving cores: this process (and so every process it starts)
  // runs on them, the backend's cpu device on the rest.
  std::vector<std::string> backend_flags = {
      absl::StrCat("--proxy_poll_us=", absl::GetFlag(FLAGS_proxy_poll_us)),
      absl::StrCat("--poll_us=", absl::GetFlag(FLAGS_poll_us)),
      absl::StrCat("--poll_idle_percent=",
                   absl::GetFlag(FLAGS_poll_idle_percent))};
  const std::string backend_config =
      absl::StrCat("/tmp/tessera_bench_backend_", getpid(), ".pbtxt");
  absl::Cleanup remove_backend_config = [&backend_config] {
    std::remove(backend_config.c_str());
  };
  // Gives the backend a config whose cpu device has `cores`.
  auto use_device_cores = [&](const std::vector<int>& cores) {
    std::string device =
        "id: \"backend0\" devices { id: \"cpu0\" kind: DEVICE_KIND_CPU";
    for (int c : cores) absl::StrAppend(&device, " cpu_cores: ", c);
    device += " }";
    std::ofstream(backend_config) << device;
    backend_flags.push_back("--config=" + backend_config);
  };
  if (!absl::GetFlag(FLAGS_serving_cores).empty()) {
    auto serving = ParseCoreList(absl::GetFlag(FLAGS_serving_cores));
    if (!serving.ok() || !allowed.ok()) {
      std::fprintf(stderr, "--serving_cores: %s\n",
                   (serving.ok() ? allowed.status() : serving.status())
                       .ToString()
                       .c_str());
      return 1;
    }
    std::vector<int> device_cores;
    for (int c : *allowed) {
      if (std::find(serving->begin(), serving->end(), c) == serving->end()) {
        device_cores.push_back(c);
      }
    }
    if (device_cores.size() < models.size()) {
      std::fprintf(stderr,
                   "--serving_cores leaves %d core(s) for the device, fewer "
                   "than the %zu gpulets (one per model) need\n",
                   static_cast<int>(device_cores.size()), models.size());
      return 1;
    }
    absl::Status pinned = SetCpuAffinity(*serving);
    if (!pinned.ok()) {
      std::fprintf(stderr, "--serving_cores: %s\n", pinned.ToString().c_str());
      return 1;
    }
    use_device_cores(device_cores);
    std::printf("Serving processes on cores %s, the cpu device on the rest\n",
                absl::GetFlag(FLAGS_serving_cores).c_str());
  }

  // A pinned client: the servers start on the other cores (children
  // inherit the affinity of the thread that starts them).
  auto mine = GetCpuAffinity(0);
  auto chosen = ClientCore(absl::GetFlag(FLAGS_client_core),
                           mine.ok() ? *mine : std::vector<int>{});
  if (!chosen.ok()) {
    std::fprintf(stderr, "--client_core: %s\n",
                 std::string(chosen.status().message()).c_str());
    return 1;
  }
  const int client_core = *chosen;
  std::vector<int> server_cores;
  if (client_core >= 0) {
    for (int c : *mine) {
      if (c != client_core) server_cores.push_back(c);
    }
    std::printf(
        "Client on core %d, echo server, frontend and backend on "
        "cores %s\n",
        client_core, FormatCoreList(server_cores).c_str());
    // The backend's cpu device keeps this process's cores (it would take
    // only the servers' cores it inherits).
    if (absl::GetFlag(FLAGS_serving_cores).empty()) use_device_cores(*mine);
  } else if (absl::GetFlag(FLAGS_client_core) != "none") {
    std::printf("One core: the client is not pinned\n");
  }
  // Runs `start` with this thread on the servers' cores, then pins it back
  // to the client's core.
  auto on_server_cores = [&](auto start) {
    if (client_core >= 0) (void)SetCpuAffinity(server_cores);
    auto result = start();
    if (client_core >= 0) (void)SetCpuAffinity({client_core});
    return result;
  };

  // 1. One-hop floor: an echo server in another process.
  const std::string echo_port_file =
      absl::StrCat("/tmp/tessera_bench_echo_", getpid(), ".port");
  Subprocess::Options echo_options;
  echo_options.argv = {
      std::filesystem::read_symlink("/proc/self/exe"),
      "--serve_echo=" + echo_port_file,
      absl::StrCat("--echo_handoff=", absl::GetFlag(FLAGS_echo_handoff)),
      absl::StrCat("--echo_sync=", absl::GetFlag(FLAGS_echo_sync)),
      absl::StrCat("--echo_async=", absl::GetFlag(FLAGS_echo_async)),
      absl::StrCat("--echo_poll_us=", absl::GetFlag(FLAGS_echo_poll_us)),
      absl::StrCat("--poll_idle_percent=",
                   absl::GetFlag(FLAGS_poll_idle_percent))};
  auto echo_process =
      on_server_cores([&] { return Subprocess::Spawn(echo_options); });
  if (!echo_process.ok()) return 1;
  int echo_port = 0;
  for (int i = 0; i < 500 && echo_port == 0; ++i) {
    std::ifstream(echo_port_file) >> echo_port;
    absl::SleepFor(absl::Milliseconds(10));
  }
  std::remove(echo_port_file.c_str());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  auto echo_stub = inference::GRPCInferenceService::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", echo_port),
                                grpc::InsecureChannelCredentials(), args));
  // Back to back: the floor with warm caches and busy cores.
  std::map<std::string, Timed> floor_b2b;
  for (const auto& m : models) {
    std::fprintf(stderr, "echo %s, back to back...\n", m.c_str());
    const auto request = RandomRequest((*repo)->Find(m)->config);
    for (int i = 0; i < warmup + iterations; ++i) {
      double us = 0;
      inference::ModelInferResponse response;
      if (Call(echo_stub.get(), request, &us, &response) && i >= warmup) {
        floor_b2b[m].total.push_back(us);
      }
    }
  }

  // 2. End to end through a local cluster: one gpulet (one core) per model.
  // Echo and end-to-end requests alternate, so that both see the same
  // machine (these VMs drift by ±20 % within minutes).
  const std::string dir = absl::StrCat("/tmp/tessera_bench_repo_", getpid());
  absl::Cleanup remove_dir = [&dir] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  };
  auto subset = testing::MakeSubsetRepository(
      absl::GetFlag(FLAGS_model_repository), models, dir);
  if (!subset.ok()) return 1;
  std::string plan = "devices { backend_id: \"backend0\" device_id: \"cpu0\"";
  const double share = 100.0 / models.size();
  for (const auto& m : models) {
    absl::StrAppend(&plan, " gpulets { gpulet_id: \"", m,
                    "\" share_percent: ", share, " models { model: \"", m,
                    "\" batch_size: 1 } }");
  }
  plan += " }";
  testing::LocalCluster::Options options;
  options.bin_dir = absl::GetFlag(FLAGS_bin_dir);
  options.model_repository = *subset;
  options.static_plan = plan;
  options.extra_backend_flags = backend_flags;
  options.extra_frontend_flags = {
      absl::StrCat("--poll_us=", absl::GetFlag(FLAGS_poll_us)),
      absl::StrCat("--poll_idle_percent=",
                   absl::GetFlag(FLAGS_poll_idle_percent))};
  std::map<std::string, Timed> floor, e2e;
  struct ExecPair {
    // `copy`: a second in-process copy of the model, run in turn with the
    // first: how far two copies of the same weights differ. `second`: the
    // same model on a proxy process of its own (--reference_proxy).
    Samples proxy, in_process, copy, second;
  };
  std::map<std::string, ExecPair> exec_alt;
  std::map<std::string, std::vector<int>> cores;
  // Per model and process: CPU time and switches per request.
  std::map<std::string, std::map<std::string, ProcessCounters>> cost;
  {
    auto cluster =
        on_server_cores([&] { return testing::LocalCluster::Start(options); });
    if (!cluster.ok()) {
      std::fprintf(stderr, "%s\n", cluster.status().ToString().c_str());
      return 1;
    }
    std::map<std::string, pid_t> proxy_pid;
    for (pid_t pid : testing::ChildPids((*cluster)->backend(0)->pid())) {
      const std::string cmd = testing::CommandLine(pid);
      for (const auto& m : models) {
        if (cmd.find("--gpulet_id=" + m + " ") != std::string::npos ||
            absl::EndsWith(cmd, "--gpulet_id=" + m + " ")) {
          cores[m] = *GetCpuAffinity(pid);
          proxy_pid[m] = pid;
        }
      }
    }
    auto stub = (*cluster)->NewStub();
    for (const auto& m : models) {
      std::fprintf(stderr, "echo and end-to-end %s, alternating...\n",
                   m.c_str());
      const auto request = RandomRequest((*repo)->Find(m)->config);
      const std::map<std::string, pid_t> processes = {
          {"echo server", (*echo_process)->pid()},
          {"frontend", (*cluster)->frontend()->pid()},
          {"backend", (*cluster)->backend(0)->pid()},
          {"proxy", proxy_pid[m]}};
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
        const bool echo_ok = Call(echo_stub.get(), request, &us, &response);
        if (echo_ok && i >= warmup) floor[m].total.push_back(us);
        response.Clear();
        if (!Call(stub.get(), request, &us, &response) || i < warmup) continue;
        ++answered;
        e2e[m].total.push_back(us);
        for (const auto& [k, v] : response.parameters()) {
          e2e[m].params[k].push_back(static_cast<double>(v.int64_param()));
        }
      }
      for (const auto& [name, pid] : processes) {
        const ProcessCounters now = ReadCounters(pid);
        const double n = std::max(1, answered);
        cost[m][name] = {(now.cpu_us - before[name].cpu_us) / n,
                         (now.switches - before[name].switches) / n};
      }
      if (answered == 0) {
        std::fprintf(stderr, "no end-to-end request for %s succeeded\n",
                     m.c_str());
        return 1;
      }
      // The proxy's exec against the same runner in this process, request
      // by request: an end-to-end call, then one in-process run on the
      // proxy's cores (the proxy idles meanwhile), so that both see the
      // same minute of a machine whose speed drifts.
      std::fprintf(stderr, "end-to-end and in-process %s, alternating...\n",
                   m.c_str());
      const auto home = GetCpuAffinity(0);
      auto model = InProcessModel::Create(**repo, m, cores[m].size());
      auto copy = InProcessModel::Create(**repo, m, cores[m].size());
      if (model == nullptr || copy == nullptr || !home.ok()) return 1;
      std::unique_ptr<ProxyHandle> second;
      if (absl::GetFlag(FLAGS_reference_proxy)) {
        ProxyHandle::Options po;
        po.proxy_binary = absl::GetFlag(FLAGS_bin_dir) + "/tessera_proxy";
        po.config.set_model_repository(*subset);
        po.config.set_gpulet_id(
            absl::StrCat("bench-reference-", getpid(), "-", m));
        po.config.set_device_id("reference");
        po.config.set_device_kind(DEVICE_KIND_CPU);
        *po.config.add_models() = (*repo)->Find(m)->config;
        for (int c : cores[m]) po.config.add_cpu_cores(c);
        po.config.set_threads(std::max<int>(1, cores[m].size()));
        SetProxyPoll(*MakePollOptions(absl::GetFlag(FLAGS_proxy_poll_us),
                                      absl::GetFlag(FLAGS_poll_idle_percent)),
                     &po.config);
        auto started = ProxyHandle::Start(po);
        if (!started.ok()) {
          std::fprintf(stderr, "second proxy for %s: %s\n", m.c_str(),
                       started.status().ToString().c_str());
          return 1;
        }
        second = std::move(*started);
      }
      const BatchRequest second_batch = ToBatchRequest(m, request);
      const int turns = second != nullptr ? 3 : 2;
      for (int i = 0; i < warmup + iterations; ++i) {
        double us = 0;
        inference::ModelInferResponse response;
        if (!Call(stub.get(), request, &us, &response)) continue;
        // In turn: the in-process runner, its copy, the second proxy.
        const int turn = i % turns;
        double exec = -1;
        if (turn == 2) {
          exec = RunOn(second.get(), second_batch);
        } else {
          if (!cores[m].empty()) (void)SetCpuAffinity(cores[m]);
          exec = turn == 1 ? copy->Run() : model->Run();
          (void)SetCpuAffinity(*home);
        }
        auto it = response.parameters().find("tessera.exec_us");
        if (i < warmup || exec < 0 || it == response.parameters().end()) {
          continue;
        }
        if (turn == 1) {
          exec_alt[m].copy.push_back(exec);
        } else if (turn == 2) {
          exec_alt[m].second.push_back(exec);
        } else {
          exec_alt[m].proxy.push_back(
              static_cast<double>(it->second.int64_param()));
          exec_alt[m].in_process.push_back(exec);
        }
      }
    }
  }
  // 3. In-process execution with the proxy's runner on the same core:
  // back to back; paced (idle between runs for about the end-to-end time,
  // as the proxy is between sequential requests: caches go cold); and
  // alternating with an echo call (between runs, gRPC work of the client
  // and the echo server runs on the machine's cores, as the frontend's and
  // backend's threads run on the proxy's core between its requests).
  std::map<std::string, Samples> inproc, paced, with_echo;
  for (const auto& m : models) {
    if (!cores[m].empty()) (void)SetCpuAffinity(cores[m]);
    auto model = InProcessModel::Create(**repo, m, cores[m].size());
    if (model == nullptr) return 1;
    const auto request = RandomRequest((*repo)->Find(m)->config);
    const absl::Duration gap =
        absl::Microseconds(Percentile(e2e[m].total, .5) -
                           Percentile(e2e[m].params.at("tessera.exec_us"), .5));
    for (auto* samples : {&inproc, &paced, &with_echo}) {
      for (int i = 0; i < warmup + iterations; ++i) {
        if (samples == &paced) absl::SleepFor(gap);
        if (samples == &with_echo) {
          double us = 0;
          inference::ModelInferResponse response;
          (void)Call(echo_stub.get(), request, &us, &response);
        }
        const double exec = model->Run();
        if (exec >= 0 && i >= warmup) (*samples)[m].push_back(exec);
      }
    }
  }
  (*echo_process)->Stop(absl::Seconds(5));

  std::printf(
      "\nServing-path overhead at batch 1 (%d requests each, microseconds; "
      "p50 / p99)\n\n",
      iterations);
  std::printf(
      "%-10s %9s %15s %15s %15s %15s %15s %8s %8s %15s %8s %15s %8s %15s "
      "%8s\n",
      "model", "req bytes", "echo b2b", "echo alt", "end-to-end", "proxy exec",
      "overhead", "ovh/alt", "ovh/b2b", "in-proc exec", "exec/inp",
      "in-proc paced", "exec/pcd", "in-proc w/ echo", "exec/w-e");
  auto pair = [](const Samples& x) {
    return absl::StrFormat("%6.0f / %6.0f", Percentile(x, .5),
                           Percentile(x, .99));
  };
  for (const auto& m : models) {
    const Timed& e = e2e[m];
    const Samples& exec = e.params.at("tessera.exec_us");
    const Samples overhead = Difference(e.total, exec);
    const size_t bytes =
        RandomRequest((*repo)->Find(m)->config).raw_input_contents(0).size();
    const double ovh = Percentile(overhead, .5);
    std::printf(
        "%-10s %9zu %15s %15s %15s %15s %15s %8.2f %8.2f %15s %8.3f %15s "
        "%8.3f %15s %8.3f\n",
        m.c_str(), bytes, pair(floor_b2b[m].total).c_str(),
        pair(floor[m].total).c_str(), pair(e.total).c_str(), pair(exec).c_str(),
        pair(overhead).c_str(), ovh / Percentile(floor[m].total, .5),
        ovh / Percentile(floor_b2b[m].total, .5), pair(inproc[m]).c_str(),
        Percentile(exec, .5) / Percentile(inproc[m], .5),
        pair(paced[m]).c_str(), Percentile(exec, .5) / Percentile(paced[m], .5),
        pair(with_echo[m]).c_str(),
        Percentile(exec, .5) / Percentile(with_echo[m], .5));
  }
  std::printf(
      "\necho b2b: echo calls back to back; echo alt: echo calls alternating "
      "with the end-to-end calls (the floor under the same conditions: "
      "processes idle between calls, caches cold).\nin-proc: the proxy's "
      "runner in this process on the proxy's cores, back to back; paced: "
      "idle between runs for the measured overhead; w/ echo: one echo call "
      "between runs (gRPC work on the machine's cores between runs, as "
      "between the proxy's requests).\n");
  std::printf(
      "\nProxy exec against in-process, alternating request by request "
      "(an end-to-end call, then one in-process run on the proxy's cores; "
      "microseconds, p50 / p99)\n\n");
  std::printf("%-10s %15s %15s %10s %15s %10s %15s %10s %10s\n", "model",
              "proxy exec", "in-proc exec", "exec/inp", "in-proc copy",
              "copy/inp", "2nd proxy", "2nd/inp", "exec/2nd");
  for (const auto& m : models) {
    const ExecPair& x = exec_alt[m];
    if (x.proxy.empty()) continue;
    const double reference = Percentile(x.in_process, .5);
    std::string second = "-", second_ratio = "-", exec_to_second = "-";
    if (!x.second.empty()) {
      second = pair(x.second);
      second_ratio =
          absl::StrFormat("%.3f", Percentile(x.second, .5) / reference);
      exec_to_second = absl::StrFormat(
          "%.3f", Percentile(x.proxy, .5) / Percentile(x.second, .5));
    }
    std::printf("%-10s %15s %15s %10.3f %15s %10.3f %15s %10s %10s\n",
                m.c_str(), pair(x.proxy).c_str(), pair(x.in_process).c_str(),
                Percentile(x.proxy, .5) / reference, pair(x.copy).c_str(),
                Percentile(x.copy, .5) / reference, second.c_str(),
                second_ratio.c_str(), exec_to_second.c_str());
  }
  for (const auto& m : models) {
    if (cores[m].size() > 1) {
      std::printf(
          "\nWarning: %s's gpulet has %zu cores, so the proxy and this "
          "process each run an OpenMP team of %zu threads on them; the "
          "proxy's idle team spins and slows this process's runs (20-fold "
          "with lenet on two cores), so exec/inp means little. Measure with "
          "one core per model (as many models as cores).\n",
          m.c_str(), cores[m].size(), cores[m].size());
    }
  }
  std::printf(
      "\nAfter each end-to-end call one reference runs, in turn: the "
      "in-process runner (paired with that call's proxy exec), a second "
      "in-process copy of the model, and (--reference_proxy) a second proxy "
      "process this benchmark starts on the same cores. copy/inp is how far "
      "two copies of the same weights in one process differ: the noise "
      "floor of exec/inp. 2nd/inp and exec/2nd tell a gap any separate "
      "proxy process shows from one the serving path causes.\n");
  std::printf("\nPer-hop breakdown, p50 of each part (microseconds)\n\n");
  std::printf("%-10s %12s %14s %13s %14s %12s %13s %10s\n", "model",
              "client<->fe", "fe queue+disp", "fe<->backend", "be<->proxy ch",
              "proxy other", "device queue", "exec");
  for (const auto& m : models) {
    const Timed& e = e2e[m];
    const auto& p = e.params;
    const Samples client_hop = Difference(e.total, p.at("tessera.frontend_us"));
    const Samples network = Difference(p.at("tessera.backend_round_trip_us"),
                                       p.at("tessera.backend_us"));
    const Samples channel = Difference(
        Difference(p.at("tessera.backend_us"), p.at("tessera.proxy_us")),
        p.at("tessera.device_queue_us"));
    const Samples proxy_other =
        Difference(p.at("tessera.proxy_us"), p.at("tessera.exec_us"));
    std::printf("%-10s %12.0f %14.0f %13.0f %14.0f %12.0f %13.0f %10.0f\n",
                m.c_str(), Percentile(client_hop, .5),
                Percentile(p.at("tessera.frontend_queue_us"), .5) +
                    (Percentile(p.at("tessera.frontend_us"), .5) -
                     Percentile(p.at("tessera.frontend_queue_us"), .5) -
                     Percentile(p.at("tessera.backend_round_trip_us"), .5)),
                Percentile(network, .5), Percentile(channel, .5),
                Percentile(proxy_other, .5),
                Percentile(p.at("tessera.device_queue_us"), .5),
                Percentile(p.at("tessera.exec_us"), .5));
  }
  std::printf(
      "\nclient<->fe: end-to-end minus the frontend's own time (the client "
      "hop);\nfe queue+disp: frontend time not spent waiting for the backend "
      "(validation, queueing, batching, output splitting);\nfe<->backend: "
      "backend round trip minus backend time (the second network hop);\n"
      "be<->proxy ch: backend time minus the proxy's own time and device "
      "queueing (the handoff: copies into and out of shared memory, the "
      "control message each way and the wake-up of the thread it reaches);\n"
      "proxy other: the proxy's own time minus execution (reading the "
      "command, wrapping the tensors, the result message).\n");

  std::printf(
      "\nWork per request, alternating run: CPU time (us) and thread "
      "switches (voluntary + involuntary) of each process, summed over its "
      "threads\n\n");
  std::printf("%-10s %20s %20s %20s %26s\n", "model", "echo server", "frontend",
              "backend", "proxy (of which exec)");
  for (const auto& m : models) {
    const auto& by = cost[m];
    const Samples& exec = e2e[m].params.at("tessera.exec_us");
    double exec_mean = 0;
    for (double x : exec) exec_mean += x / exec.size();
    auto cell = [&](const std::string& name) {
      return absl::StrFormat("%.0f us / %.1f sw", by.at(name).cpu_us,
                             by.at(name).switches);
    };
    std::printf("%-10s %20s %20s %20s %26s\n", m.c_str(),
                cell("echo server").c_str(), cell("frontend").c_str(),
                cell("backend").c_str(),
                absl::StrFormat("%s (%.0f)", cell("proxy"), exec_mean).c_str());
  }
  std::printf(
      "\nAn echo crosses one process boundary and back; a request crosses "
      "three (frontend, backend, proxy). On a VM every thread switch that "
      "wakes another core costs the waker tens of microseconds.\n");
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
    return tessera::ServeEcho(absl::GetFlag(FLAGS_serve_echo));
  }
  return tessera::Run();
}
