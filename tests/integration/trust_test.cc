// Trust between the components of a running cluster (emulated GPUs, real
// processes on loopback), tried as a hostile local client would: with stubs
// generated from our own protos and no credentials, every backend and
// admin call is refused; with the cluster's credentials, a malformed batch
// is refused and hurts no one; with TLS on, a plaintext client is refused.
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "admin.grpc.pb.h"
#include "backend.grpc.pb.h"
#include "common/subprocess.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"
#include "tools/random_request.h"

namespace tessera {
namespace testing {
namespace {

const std::string kBin = TESSERA_BIN_DIR;
const std::string kRoot = TESSERA_SOURCE_DIR;

// lenet alone on one emulated GPU (time scale 10), a static plan.
LocalCluster::Options LenetOnOneGpu(bool tls) {
  LocalCluster::Options options;
  options.bin_dir = kBin;
  auto repository = MakeSubsetRepository(
      kRoot + "/configs/emulated/models", {"lenet"},
      ::testing::TempDir() + "/trust_repo_" + std::to_string(getpid()));
  EXPECT_TRUE(repository.ok()) << repository.status();
  options.model_repository = repository.value_or("");
  options.extra_backend_flags = {"--emulated_gpus=1", "--time_scale=10",
                                 "--profile_dir=" + kRoot + "/profiles"};
  options.frontend_config = absl::StrCat(
      "policy: \"static\"\nstatic_plan { devices { backend_id: \"backend0\" "
      "device_id: \"gpu0\" gpulets { gpulet_id: \"g\" share_percent: 100 "
      "models { model: \"lenet\" batch_size: 4 rate_rps: 10 } } } }\n"
      "profile_dir: \"",
      kRoot, "/profiles\"\ntime_scale: 10\n");
  options.ready_timeout = absl::Seconds(60);
  options.tls = tls;
  return options;
}

std::chrono::system_clock::time_point In(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

// A context with a deadline and, unless empty, this authorization value.
std::unique_ptr<grpc::ClientContext> Context(const std::string& auth) {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(In(absl::Seconds(10)));
  if (!auth.empty()) c->AddMetadata("authorization", auth);
  return c;
}

// The codes of every backend method called with `auth`.
std::map<std::string, grpc::StatusCode> BackendCodes(BackendService::Stub* stub,
                                                     const std::string& auth) {
  std::map<std::string, grpc::StatusCode> codes;
  NodeInfo info;
  codes["GetNodeInfo"] =
      stub->GetNodeInfo(Context(auth).get(), {}, &info).error_code();
  HealthResponse health;
  codes["Health"] = stub->Health(Context(auth).get(), {}, &health).error_code();
  // An empty plan and its commit would stop every proxy.
  ApplyPlanRequest apply;
  apply.mutable_plan()->set_epoch(1000);
  ApplyPlanResponse applied;
  codes["ApplyPlan"] =
      stub->ApplyPlan(Context(auth).get(), apply, &applied).error_code();
  CommitPlanRequest commit;
  commit.set_epoch(1000);
  CommitPlanResponse committed;
  codes["CommitPlan"] =
      stub->CommitPlan(Context(auth).get(), commit, &committed).error_code();
  auto context = Context(auth);
  auto stream = stub->Execute(context.get());
  BatchRequest batch;
  batch.set_gpulet_id("g");
  batch.set_model("lenet");
  stream->Write(batch);
  stream->WritesDone();
  BatchResponse response;
  EXPECT_FALSE(stream->Read(&response)) << "a batch was answered";
  codes["Execute"] = stream->Finish().error_code();
  return codes;
}

std::map<std::string, grpc::StatusCode> AdminCodes(AdminService::Stub* stub,
                                                   const std::string& auth) {
  std::map<std::string, grpc::StatusCode> codes;
  AdminStatus status;
  codes["GetStatus"] =
      stub->GetStatus(Context(auth).get(), {}, &status).error_code();
  SetPolicyRequest policy;
  policy.set_policy("sbp");
  SetPolicyResponse set;
  codes["SetPolicy"] =
      stub->SetPolicy(Context(auth).get(), policy, &set).error_code();
  ReplanResponse replanned;
  codes["Replan"] =
      stub->Replan(Context(auth).get(), {}, &replanned).error_code();
  return codes;
}

void ExpectAll(const std::map<std::string, grpc::StatusCode>& codes,
               grpc::StatusCode expected) {
  for (const auto& [method, code] : codes) {
    EXPECT_EQ(code, expected) << method;
  }
}

// The proxy pids the backend reports, by gpulet.
std::map<std::string, int> ProxyPids(BackendService::Stub* stub) {
  HealthResponse health;
  grpc::Status s = stub->Health(Context("").get(), {}, &health);
  EXPECT_TRUE(s.ok()) << s.error_message();
  std::map<std::string, int> pids;
  for (const GpuletStatus& g : health.gpulets()) {
    pids[g.gpulet_id()] = g.pid();
  }
  return pids;
}

void ExpectLenetServes(LocalCluster* cluster) {
  auto stub = cluster->NewStub();
  std::mt19937 rng(3);
  auto request = RandomRequestFor(stub.get(), "lenet", 1, &rng);
  ASSERT_TRUE(request.ok()) << request.status();
  MakeShapeOnly(&*request);
  inference::ModelInferResponse response;
  grpc::ClientContext c;
  c.set_deadline(In(absl::Seconds(20)));
  grpc::Status s = stub->ModelInfer(&c, *request, &response);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST(TrustTest, CallsWithoutTheClustersCredentialsAreRefused) {
  auto cluster = LocalCluster::Start(LenetOnOneGpu(/*tls=*/false));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto trusted = (*cluster)->NewBackendStub(0);
  const std::map<std::string, int> before = ProxyPids(trusted.get());
  ASSERT_EQ(before.size(), 1u);

  auto backend = BackendService::NewStub(grpc::CreateChannel(
      (*cluster)->backend_address(0), grpc::InsecureChannelCredentials()));
  ExpectAll(BackendCodes(backend.get(), ""), grpc::StatusCode::UNAUTHENTICATED);
  ExpectAll(BackendCodes(backend.get(), "Bearer 0123456789abcdef0123"),
            grpc::StatusCode::PERMISSION_DENIED);
  auto admin = AdminService::NewStub(grpc::CreateChannel(
      (*cluster)->admin_address(), grpc::InsecureChannelCredentials()));
  ExpectAll(AdminCodes(admin.get(), ""), grpc::StatusCode::UNAUTHENTICATED);
  ExpectAll(
      AdminCodes(admin.get(), "Bearer " + (*cluster)->admin_token() + "x"),
      grpc::StatusCode::PERMISSION_DENIED);

  // Nothing changed: the same proxy serves, the policy is the same.
  EXPECT_EQ(ProxyPids(trusted.get()), before);
  ASSERT_NO_FATAL_FAILURE(ExpectLenetServes(cluster->get()));
  AdminStatus status;
  auto c = Context("Bearer " + (*cluster)->admin_token());
  ASSERT_TRUE(admin->GetStatus(c.get(), {}, &status).ok());
  EXPECT_EQ(status.policy(), "static");
  EXPECT_EQ(status.plan().epoch(), 1);
}

// With the cluster's token, batches that lie about their size are refused
// with INVALID_ARGUMENT before any proxy sees them; the proxy lives on.
TEST(TrustTest, MalformedBatchesWithCredentialsAreInvalidAndHarmless) {
  auto cluster = LocalCluster::Start(LenetOnOneGpu(/*tls=*/false));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto backend = (*cluster)->NewBackendStub(0);
  const std::map<std::string, int> before = ProxyPids(backend.get());
  ASSERT_EQ(before.size(), 1u);
  const std::string gpulet = before.begin()->first;

  grpc::ClientContext context;
  context.set_deadline(In(absl::Seconds(20)));
  auto stream = backend->Execute(&context);
  const std::vector<std::vector<int64_t>> shapes = {
      {8, 1, 28, 28},                                // 8 items, data of 1
      {int64_t{1} << 40, int64_t{1} << 40, 28, 28},  // overflows
      {-1, 1, 28, 28}};                              // negative
  for (size_t i = 0; i < shapes.size(); ++i) {
    BatchRequest b;
    b.set_gpulet_id(gpulet);
    b.set_model("lenet");
    b.set_batch_id(i + 1);
    Tensor* t = b.add_inputs();
    t->set_name("INPUT__0");
    t->set_data_type(TYPE_FP32);
    for (int64_t d : shapes[i]) t->add_shape(d);
    t->set_data(std::string(28 * 28 * 4, '\0'));
    ASSERT_TRUE(stream->Write(b));
  }
  stream->WritesDone();
  BatchResponse response;
  int answered = 0;
  while (stream->Read(&response)) {
    ++answered;
    EXPECT_EQ(response.status().code(),
              static_cast<int>(absl::StatusCode::kInvalidArgument))
        << response.status().message();
    EXPECT_EQ(response.outputs_size(), 0);
  }
  EXPECT_EQ(answered, 3);
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(ProxyPids(backend.get()), before);
  ASSERT_NO_FATAL_FAILURE(ExpectLenetServes(cluster->get()));
}

// Even with the cluster's token, a plan may not start more than
// --max_gpulets_per_device processes on a device (16 by default): one that
// asks for 40 is refused and nothing starts.
TEST(TrustTest, APlanOverTheProcessLimitIsRefused) {
  auto cluster = LocalCluster::Start(LenetOnOneGpu(/*tls=*/false));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto backend = (*cluster)->NewBackendStub(0);
  const std::map<std::string, int> before = ProxyPids(backend.get());
  ApplyPlanRequest request;
  Plan* plan = request.mutable_plan();
  plan->set_epoch(1000);
  DevicePlan* device = plan->add_devices();
  device->set_backend_id("backend0");
  device->set_device_id("gpu0");
  for (int i = 0; i < 40; ++i) {
    GpuletPlan* g = device->add_gpulets();
    g->set_gpulet_id(absl::StrCat("x", i));
    g->set_share_percent(2.5);
    ModelAssignment* m = g->add_models();
    m->set_model("lenet");
    m->set_batch_size(1);
    m->set_rate_rps(1);
  }
  ApplyPlanResponse response;
  grpc::Status s = backend->ApplyPlan(Context("").get(), request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("max_gpulets"));
  EXPECT_EQ(ProxyPids(backend.get()), before);
  ASSERT_NO_FATAL_FAILURE(ExpectLenetServes(cluster->get()));
}

// A backend asked to listen beyond loopback with nothing that
// authenticates the frontend refuses to start (exit 2) and says how to fix
// it; with a token it starts.
TEST(TrustTest, BackendRefusesAnUnauthenticatedNonLoopbackListen) {
  const std::string dir =
      ::testing::TempDir() + "/trust_listen_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  // The backend with `extra` flags, its output in `log`.
  auto backend = [&](const std::string& extra, const std::string& log) {
    Subprocess::Options o;
    o.argv = {"/bin/sh", "-c",
              absl::StrCat("exec ", kBin,
                           "/tessera_backend --listen=0.0.0.0:0 "
                           "--emulated_gpus=1 --model_repository=",
                           kRoot, "/configs/emulated/models --profile_dir=",
                           kRoot, "/profiles ", extra, " > ", log, " 2>&1")};
    return Subprocess::Spawn(o);
  };
  auto refused = backend("", dir + "/refused.log");
  ASSERT_TRUE(refused.ok()) << refused.status();
  const int status = (*refused)->Wait(absl::Seconds(30)).value_or(-1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  std::ifstream log(dir + "/refused.log");
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_THAT(text, ::testing::HasSubstr("--cluster_token_file"));

  const std::string token = dir + "/token";
  std::ofstream(token) << "0123456789abcdef0123456789abcdef\n";
  const std::string port_file = dir + "/port";
  auto started = backend(
      absl::StrCat("--cluster_token_file=", token, " --port_file=", port_file),
      dir + "/started.log");
  ASSERT_TRUE(started.ok()) << started.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!std::filesystem::exists(port_file) && (*started)->Running() &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_TRUE(std::filesystem::exists(port_file));
  (*started)->Stop(absl::Seconds(10));
  std::filesystem::remove_all(dir);
}

// Runs curl on `url` with `flags`; its exit code.
int Curl(const std::vector<std::string>& flags, const std::string& url) {
  Subprocess::Options o;
  o.argv = {"/usr/bin/curl", "-sf", "-o", "/dev/null", "--max-time", "10"};
  o.argv.insert(o.argv.end(), flags.begin(), flags.end());
  o.argv.push_back(url);
  auto p = Subprocess::Spawn(o);
  if (!p.ok()) return -1;
  return (*p)->Wait(absl::Seconds(20)).value_or(-1);
}

// TLS everywhere: clients of the KServe port need TLS (a plaintext one is
// refused), the backends need the frontend's certificate (mutual TLS), and
// the HTTP port serves HTTPS.
TEST(TrustTest, TlsPortsRefusePlaintextAndServeTls) {
  LocalCluster::Options options = LenetOnOneGpu(/*tls=*/true);
  const std::string http_port_file =
      ::testing::TempDir() + "/tls_http_port_" + std::to_string(getpid());
  std::filesystem::remove(http_port_file);
  options.extra_frontend_flags = {"--http_port_file=" + http_port_file};
  auto cluster = LocalCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  // NewStub speaks TLS, verifying the frontend against the cluster's CA.
  ASSERT_NO_FATAL_FAILURE(ExpectLenetServes(cluster->get()));

  auto plaintext = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
      (*cluster)->frontend_address(), grpc::InsecureChannelCredentials()));
  inference::ServerLiveResponse live;
  EXPECT_EQ(plaintext->ServerLive(Context("").get(), {}, &live).error_code(),
            grpc::StatusCode::UNAVAILABLE);

  // A TLS client of a backend without the cluster's certificate: the
  // handshake fails, whatever token it sends.
  const std::string tls = (*cluster)->tls_dir();
  std::ifstream ca_in(tls + "/ca.pem");
  grpc::SslCredentialsOptions no_cert;
  no_cert.pem_root_certs.assign(std::istreambuf_iterator<char>(ca_in), {});
  auto backend = BackendService::NewStub(grpc::CreateChannel(
      (*cluster)->backend_address(0), grpc::SslCredentials(no_cert)));
  HealthResponse health;
  EXPECT_EQ(backend->Health(Context("").get(), {}, &health).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // With it (and the token), the backend answers.
  auto trusted = (*cluster)->NewBackendStub(0);
  EXPECT_EQ(ProxyPids(trusted.get()).size(), 1u);

  std::ifstream port_in(http_port_file);
  int http_port = 0;
  ASSERT_TRUE(port_in >> http_port);
  const std::string path =
      absl::StrCat("://127.0.0.1:", http_port, "/v2/health/ready");
  EXPECT_EQ(Curl({"--cacert", tls + "/ca.pem"}, "https" + path), 0);
  EXPECT_NE(Curl({}, "http" + path), 0);
  std::filesystem::remove(http_port_file);
}

}  // namespace
}  // namespace testing
}  // namespace tessera
