#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "backend.grpc.pb.h"
#include "common/subprocess.h"
#include "grpc_service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace tessera {
namespace testing {

// A frontend and N backend daemons (each spawning its proxies) as real
// processes on 127.0.0.1 with ports chosen at run time. For integration
// tests and benchmarks. Every wait has a deadline.
class LocalCluster {
 public:
  struct Options {
    std::string bin_dir;           // tessera_frontend, _backend, _proxy
    std::string model_repository;  // shared by all processes
    // Text of the frontend's static plan; backends are "backend0".. and
    // each has one cpu device "cpu0" unless extra_backend_flags say else.
    std::string static_plan;
    // Used instead of a static plan when static_plan is empty: the rest of
    // the FrontendConfig text (policy, re-planning settings, ...).
    std::string frontend_config;
    int num_backends = 1;
    std::vector<std::string> extra_frontend_flags;
    std::vector<std::string> extra_backend_flags;
    // Added to the frontend's environment.
    std::map<std::string, std::string> frontend_env;
    absl::Duration ready_timeout = absl::Seconds(180);
    // TLS everywhere (scripts/make_secrets.sh in the work directory): the
    // frontend's ports serve TLS, frontend and backends authenticate each
    // other with certificates (mutual TLS), and NewStub speaks TLS.
    bool tls = false;
    // Where the processes write their output (<name>.log each: frontend,
    // backend0, ...); empty: the test's own stdout and stderr.
    std::string log_dir;
  };

  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(
      const Options& options);
  ~LocalCluster();

  const std::string& frontend_address() const { return frontend_address_; }
  const std::string& admin_address() const { return admin_address_; }
  // The frontend's admin token (admin service, repository load/unload)
  // and the file holding it (tessera_admin --token_file).
  const std::string& admin_token() const { return admin_token_; }
  const std::string& admin_token_file() const { return admin_token_file_; }
  void AttachAdminToken(grpc::ClientContext* context) const;
  // RepositoryModelLoad (`load`) or RepositoryModelUnload of `model` on
  // `stub`, with the admin token and a deadline of `timeout`.
  grpc::Status LoadOrUnload(inference::GRPCInferenceService::Stub* stub,
                            const std::string& model, bool load,
                            absl::Duration timeout) const;
  // `reconnect_backoff` > 0: the channel reconnects after a lost
  // connection within that (gRPC's default: 1 s, then 1.6x each try).
  std::unique_ptr<inference::GRPCInferenceService::Stub> NewStub(
      absl::Duration reconnect_backoff = absl::ZeroDuration()) const;
  // A stub of backend `i` whose calls carry the cluster token (and, with
  // TLS, present the cluster's certificate): what the frontend sends.
  std::unique_ptr<BackendService::Stub> NewBackendStub(int i) const;
  // Where the TLS material is (empty without TLS): ca.pem, cert.pem,
  // key.pem.
  const std::string& tls_dir() const { return tls_dir_; }
  Subprocess* frontend() { return frontend_.get(); }
  // kill -9 of the frontend, then the same frontend again on the same
  // port (the backends keep running). Returns once it listens; readiness
  // (a plan) comes later.
  absl::Status KillAndRestartFrontend();
  // kill -9 of backend `i` (its proxies exit with it), then the same
  // backend again on the same address, as a supervisor would restart it.
  // Returns once it listens.
  absl::Status KillAndRestartBackend(int i);
  Subprocess* backend(int i) { return backends_.at(i).get(); }
  const std::string& backend_address(int i) const {
    return backend_addresses_.at(i);
  }
  int num_backends() const { return static_cast<int>(backends_.size()); }
  const std::string& work_dir() const { return work_dir_; }

 private:
  LocalCluster() = default;

  std::string work_dir_;
  std::vector<std::unique_ptr<Subprocess>> backends_;
  std::vector<std::string> backend_addresses_;
  // How each backend was started (binary first), without --listen.
  std::vector<std::vector<std::string>> backend_argv_;
  std::unique_ptr<Subprocess> frontend_;
  Subprocess::Options frontend_spawn_;
  std::string frontend_address_;
  std::string admin_address_;
  std::string admin_token_;
  std::string admin_token_file_;
  std::string cluster_token_;
  std::string tls_dir_;
};

// Makes a model repository under `dir` with `models` of
// `source_repository` (to run a cluster on a subset of the shipped models):
// their version directories are symlinked; their configs are copied, with
// slo_ms replaced by `slo_ms_override` when it is positive.
absl::StatusOr<std::string> MakeSubsetRepository(
    const std::string& source_repository,
    const std::vector<std::string>& models, const std::string& dir,
    double slo_ms_override = 0);

// Starts `binary` with `args` plus --listen=127.0.0.1:0 and a port file in
// `dir` named after `name`, and waits until it serves; returns its port.
// `log_fd` >= 0: the process's stdout and stderr go there.
absl::StatusOr<int> StartServer(const std::string& binary,
                                std::vector<std::string> args,
                                const std::string& dir, const std::string& name,
                                std::unique_ptr<Subprocess>* process,
                                std::map<std::string, std::string> env = {},
                                int log_fd = -1);

// The environment variable's value, or `fallback` when it is unset or
// empty. A GPU node's binaries and models may live apart from this build
// (docs/cuda.md): TESSERA_GPU_BIN_DIR and TESSERA_GPU_MODEL_DIR say where.
std::string EnvOr(const char* name, const std::string& fallback);

// Pids of the live processes whose parent is `parent`.
std::vector<pid_t> ChildPids(pid_t parent);
// The process's command line, arguments joined by spaces.
std::string CommandLine(pid_t pid);
// The process's threads: thread id -> name (/proc/<pid>/task/*/comm).
std::map<pid_t, std::string> ThreadNames(pid_t pid);

// What one thread of a process has done so far: time on a CPU
// (/proc/<pid>/task/<tid>/schedstat), how often it went to sleep
// (voluntary context switches) and how often it was preempted
// (involuntary ones), from its status. -1 if unreadable.
struct ThreadCounters {
  int64_t on_cpu_ns = -1;
  int64_t voluntary_switches = -1;
  int64_t involuntary_switches = -1;
};
ThreadCounters ReadThreadCounters(pid_t pid, pid_t tid);

}  // namespace testing
}  // namespace tessera
