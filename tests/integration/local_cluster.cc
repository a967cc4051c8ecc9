#include "tests/integration/local_cluster.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/model_repository.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "common/tls_config.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/client_interceptor.h"
#include "model_config.pb.h"

namespace tessera {
namespace testing {
namespace fs = std::filesystem;
namespace {

absl::StatusOr<int> WaitForPortFile(const std::string& path,
                                    Subprocess* process,
                                    absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    std::ifstream in(path);
    int port = 0;
    if (in >> port && port > 0) return port;
    if (!process->Running()) {
      return absl::UnavailableError(
          absl::StrCat("process ", process->pid(), " exited before serving"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(absl::StrCat("no port in ", path));
}

// Adds "authorization: <value>" to every call of a channel.
class TokenInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit TokenInterceptor(const std::string& value) : value_(value) {}
  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", value_});
    }
    methods->Proceed();
  }

 private:
  const std::string value_;
};

class TokenInterceptorFactory
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit TokenInterceptorFactory(std::string value)
      : value_(std::move(value)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new TokenInterceptor(value_);
  }

 private:
  const std::string value_;
};

// Plaintext without a TLS directory; else TLS verifying the server against
// its CA and presenting the cluster's certificate.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
    const std::string& tls_dir) {
  if (tls_dir.empty()) return grpc::InsecureChannelCredentials();
  auto tls = TlsConfig::Load(
      {tls_dir + "/cert.pem", tls_dir + "/key.pem", tls_dir + "/ca.pem"});
  ABSL_RAW_CHECK(tls.ok(), "TLS material unreadable");  // MakeCertificates
  return tls->ChannelCredentials();
}

absl::Status MakeCertificates(const std::string& dir) {
  Subprocess::Options o;
  o.argv = {std::string(TESSERA_SOURCE_DIR) + "/scripts/make_secrets.sh", dir};
  ASSIGN_OR_RETURN(auto p, Subprocess::Spawn(o));
  ASSIGN_OR_RETURN(int code, p->Wait(absl::Seconds(30)));
  if (code != 0) {
    return absl::InternalError(
        absl::StrCat("scripts/make_secrets.sh exited with ", code));
  }
  return absl::OkStatus();
}

// <dir>/<name>.log opened for appending, for a child's stdout and stderr
// (no file, fd -1, when `dir` is empty); closed here once the child has
// its copy.
class LogFile {
 public:
  LogFile(const std::string& dir, const std::string& name)
      : fd_(dir.empty()
                ? -1
                : ::open((dir + "/" + name + ".log").c_str(),
                         O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {}
  ~LogFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;
  int fd() const { return fd_; }

 private:
  const int fd_;
};

// 32 hex digits from the kernel's random source.
std::string RandomToken() {
  std::ifstream random("/dev/urandom", std::ios::binary);
  unsigned char bytes[16] = {};
  random.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  std::string token;
  for (unsigned char b : bytes)
    absl::StrAppend(&token, absl::Hex(b, absl::kZeroPad2));
  return token;
}

}  // namespace

absl::StatusOr<int> StartServer(const std::string& binary,
                                std::vector<std::string> args,
                                const std::string& dir, const std::string& name,
                                std::unique_ptr<Subprocess>* process,
                                std::map<std::string, std::string> env,
                                int log_fd) {
  const std::string port_file = absl::StrCat(dir, "/", name, ".port");
  Subprocess::Options spawn;
  spawn.env = std::move(env);
  if (log_fd >= 0) spawn.inherit_fds = {{1, log_fd}, {2, log_fd}};
  spawn.argv = {binary, "--listen=127.0.0.1:0", "--port_file=" + port_file};
  for (auto& a : args) spawn.argv.push_back(std::move(a));
  auto started = Subprocess::Spawn(spawn);
  if (!started.ok()) return started.status();
  *process = std::move(*started);
  return WaitForPortFile(port_file, process->get(), absl::Seconds(30));
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const Options& options) {
  auto cluster = std::unique_ptr<LocalCluster>(new LocalCluster());
  std::string tmpl = (fs::temp_directory_path() / "tessera_cluster_XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError("mkdtemp failed");
  }
  cluster->work_dir_ = tmpl;
  // Every cluster runs with credentials, as one should: a token the
  // backends require of the frontend and one for the admin calls.
  cluster->admin_token_ = RandomToken();
  cluster->admin_token_file_ = tmpl + "/admin_token";
  std::ofstream(cluster->admin_token_file_) << cluster->admin_token_ << "\n";
  const std::string cluster_token_file = tmpl + "/cluster_token";
  cluster->cluster_token_ = RandomToken();
  std::ofstream(cluster_token_file) << cluster->cluster_token_ << "\n";
  std::vector<std::string> tls_flags;
  if (options.tls) {
    cluster->tls_dir_ = tmpl + "/tls";
    RETURN_IF_ERROR(MakeCertificates(cluster->tls_dir_));
    tls_flags = {"--tls_cert_file=" + cluster->tls_dir_ + "/cert.pem",
                 "--tls_key_file=" + cluster->tls_dir_ + "/key.pem",
                 "--tls_ca_file=" + cluster->tls_dir_ + "/ca.pem"};
  }

  std::string frontend_config;
  for (int i = 0; i < options.num_backends; ++i) {
    const std::string id = absl::StrCat("backend", i);
    std::vector<std::string> args = {
        "--id=" + id, "--model_repository=" + options.model_repository,
        "--cluster_token_file=" + cluster_token_file};
    for (const auto& f : tls_flags) args.push_back(f);
    for (const auto& f : options.extra_backend_flags) args.push_back(f);
    std::unique_ptr<Subprocess> backend;
    std::vector<std::string> argv = {
        options.bin_dir + "/tessera_backend",
        absl::StrCat("--port_file=", tmpl, "/", id, ".port")};
    argv.insert(argv.end(), args.begin(), args.end());
    cluster->backend_argv_.push_back(std::move(argv));
    const LogFile log(options.log_dir, id);
    auto port = StartServer(options.bin_dir + "/tessera_backend",
                            std::move(args), tmpl, id, &backend, {}, log.fd());
    // A backend that could not be spawned (a wrong --bin_dir) is null.
    if (backend != nullptr) cluster->backends_.push_back(std::move(backend));
    if (!port.ok()) return port.status();
    cluster->backend_addresses_.push_back(absl::StrCat("127.0.0.1:", *port));
    absl::StrAppend(&frontend_config, "backends { id: \"", id,
                    "\" address: \"127.0.0.1:", *port, "\" }\n");
  }
  if (!options.static_plan.empty()) {
    absl::StrAppend(&frontend_config, "policy: \"static\"\nstatic_plan {\n",
                    options.static_plan, "\n}\n");
  } else {
    absl::StrAppend(&frontend_config, options.frontend_config, "\n");
  }
  const std::string config_path = tmpl + "/frontend.pbtxt";
  std::ofstream(config_path) << frontend_config;

  const std::string port_file = tmpl + "/frontend.port";
  Subprocess::Options spawn;
  spawn.argv = {options.bin_dir + "/tessera_frontend",
                "--listen=127.0.0.1:0",
                "--port_file=" + port_file,
                "--config=" + config_path,
                "--http_port=0",
                "--admin_listen=127.0.0.1:0",
                "--admin_port_file=" + tmpl + "/frontend.admin",
                "--admin_token_file=" + cluster->admin_token_file_,
                "--cluster_token_file=" + cluster_token_file,
                "--model_repository=" + options.model_repository};
  for (const auto& f : tls_flags) spawn.argv.push_back(f);
  for (const auto& f : options.extra_frontend_flags) spawn.argv.push_back(f);
  spawn.env = options.frontend_env;
  const LogFile frontend_log(options.log_dir, "frontend");
  if (frontend_log.fd() >= 0) {
    spawn.inherit_fds = {{1, frontend_log.fd()}, {2, frontend_log.fd()}};
  }
  auto frontend = Subprocess::Spawn(spawn);
  if (!frontend.ok()) return frontend.status();
  cluster->frontend_ = std::move(*frontend);
  auto port =
      WaitForPortFile(port_file, cluster->frontend_.get(), absl::Seconds(30));
  if (!port.ok()) return port.status();
  cluster->frontend_address_ = absl::StrCat("127.0.0.1:", *port);
  // A restart listens where clients already connect.
  for (std::string& arg : spawn.argv) {
    if (absl::StartsWith(arg, "--listen=")) {
      arg = "--listen=" + cluster->frontend_address_;
    }
  }
  cluster->frontend_spawn_ = spawn;
  // (A restarted frontend writes to the test's output: the log file's
  // descriptor is closed by then.)
  cluster->frontend_spawn_.inherit_fds.clear();
  auto admin = WaitForPortFile(tmpl + "/frontend.admin",
                               cluster->frontend_.get(), absl::Seconds(30));
  if (!admin.ok()) return admin.status();
  cluster->admin_address_ = absl::StrCat("127.0.0.1:", *admin);

  // Ready once the plan is applied (proxies loaded and warmed up).
  auto stub = cluster->NewStub();
  const absl::Time deadline = absl::Now() + options.ready_timeout;
  while (true) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    inference::ServerReadyResponse ready;
    grpc::Status s = stub->ServerReady(&context, {}, &ready);
    if (s.ok() && ready.ready()) break;
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError("cluster did not become ready");
    }
    if (!cluster->frontend_->Running()) {
      return absl::UnavailableError("frontend exited during start-up");
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return cluster;
}

grpc::Status LocalCluster::LoadOrUnload(
    inference::GRPCInferenceService::Stub* stub, const std::string& model,
    bool load, absl::Duration timeout) const {
  grpc::ClientContext c;
  c.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  AttachAdminToken(&c);
  if (load) {
    inference::RepositoryModelLoadRequest r;
    r.set_model_name(model);
    inference::RepositoryModelLoadResponse out;
    return stub->RepositoryModelLoad(&c, r, &out);
  }
  inference::RepositoryModelUnloadRequest r;
  r.set_model_name(model);
  inference::RepositoryModelUnloadResponse out;
  return stub->RepositoryModelUnload(&c, r, &out);
}

void LocalCluster::AttachAdminToken(grpc::ClientContext* context) const {
  context->AddMetadata("authorization", "Bearer " + admin_token_);
}

LocalCluster::~LocalCluster() {
  if (frontend_ != nullptr) frontend_->Stop(absl::Seconds(10));
  for (auto& b : backends_) b->Stop(absl::Seconds(10));
  std::error_code ec;
  if (!work_dir_.empty()) fs::remove_all(work_dir_, ec);
}

std::unique_ptr<inference::GRPCInferenceService::Stub> LocalCluster::NewStub(
    absl::Duration reconnect_backoff) const {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  if (reconnect_backoff > absl::ZeroDuration()) {
    const int ms =
        static_cast<int>(absl::ToInt64Milliseconds(reconnect_backoff));
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, ms);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, ms);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, ms);
  }
  return inference::GRPCInferenceService::NewStub(grpc::CreateCustomChannel(
      frontend_address_, ChannelCredentials(tls_dir_), args));
}

std::unique_ptr<BackendService::Stub> LocalCluster::NewBackendStub(
    int i) const {
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(
      std::make_unique<TokenInterceptorFactory>("Bearer " + cluster_token_));
  return BackendService::NewStub(
      grpc::experimental::CreateCustomChannelWithInterceptors(
          backend_addresses_.at(i), ChannelCredentials(tls_dir_),
          grpc::ChannelArguments(), std::move(interceptors)));
}

absl::Status LocalCluster::KillAndRestartBackend(int i) {
  Subprocess* old = backends_.at(i).get();
  old->Signal(SIGKILL);
  auto exited = old->Wait(absl::Seconds(10));
  if (!exited.ok()) return exited.status();
  const std::string port_file = absl::StrCat(work_dir_, "/backend", i, ".port");
  std::filesystem::remove(port_file);
  Subprocess::Options spawn;
  spawn.argv = backend_argv_.at(i);
  spawn.argv.push_back("--listen=" + backend_addresses_.at(i));
  ASSIGN_OR_RETURN(backends_.at(i), Subprocess::Spawn(spawn));
  return WaitForPortFile(port_file, backends_.at(i).get(), absl::Seconds(30))
      .status();
}

absl::Status LocalCluster::KillAndRestartFrontend() {
  frontend_->Signal(SIGKILL);
  auto exited = frontend_->Wait(absl::Seconds(10));
  if (!exited.ok()) return exited.status();
  const std::string port_file = work_dir_ + "/frontend.port";
  std::filesystem::remove(port_file);
  auto frontend = Subprocess::Spawn(frontend_spawn_);
  if (!frontend.ok()) return frontend.status();
  frontend_ = std::move(*frontend);
  return WaitForPortFile(port_file, frontend_.get(), absl::Seconds(30))
      .status();
}

absl::StatusOr<std::string> MakeSubsetRepository(
    const std::string& source_repository,
    const std::vector<std::string>& models, const std::string& dir,
    double slo_ms_override) {
  std::error_code ec;
  for (const std::string& m : models) {
    const fs::path src = fs::absolute(fs::path(source_repository) / m);
    // Either format (Tessera's or Triton's); the copy is Tessera's.
    auto read = ModelRepository::ReadConfig(src.string());
    if (!read.ok()) return read.status();
    ModelConfig config = std::move(*read);
    absl::Status s;
    if (slo_ms_override > 0) config.set_slo_ms(slo_ms_override);
    const fs::path dst = fs::path(dir) / m;
    fs::create_directories(dst, ec);
    s = WriteTextProto((dst / "config.pbtxt").string(), config);
    if (!s.ok()) return s;
    for (const auto& entry : fs::directory_iterator(src)) {
      if (entry.is_directory() && !fs::exists(dst / entry.path().filename())) {
        fs::create_directory_symlink(entry.path(),
                                     dst / entry.path().filename(), ec);
        if (ec) return absl::InternalError(ec.message());
      }
    }
  }
  return dir;
}

std::vector<pid_t> ChildPids(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    pid_t pid;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    // pid (comm) state ppid ...: comm may contain spaces; parse after ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && state != "Z") children.push_back(pid);
  }
  return children;
}

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

std::string CommandLine(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"), std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)),
                  std::istreambuf_iterator<char>());
  return absl::StrReplaceAll(raw, {{std::string(1, '\0'), " "}});
}

std::map<pid_t, std::string> ThreadNames(pid_t pid) {
  std::map<pid_t, std::string> names;
  std::error_code ec;
  for (const auto& entry :
       fs::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    pid_t tid;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &tid)) continue;
    std::ifstream comm(entry.path() / "comm");
    std::getline(comm, names[tid]);
  }
  return names;
}

ThreadCounters ReadThreadCounters(pid_t pid, pid_t tid) {
  ThreadCounters counters;
  const std::string dir = absl::StrCat("/proc/", pid, "/task/", tid);
  std::ifstream schedstat(dir + "/schedstat");
  if (!(schedstat >> counters.on_cpu_ns)) counters.on_cpu_ns = -1;
  std::ifstream status(dir + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "voluntary_ctxt_switches:")) {
      counters.voluntary_switches = std::stoll(line.substr(line.find(':') + 1));
    } else if (absl::StartsWith(line, "nonvoluntary_ctxt_switches:")) {
      counters.involuntary_switches =
          std::stoll(line.substr(line.find(':') + 1));
    }
  }
  return counters;
}

}  // namespace testing
}  // namespace tessera
