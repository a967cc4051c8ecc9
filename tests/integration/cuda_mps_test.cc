// The CUDA/MPS path without a GPU: a fake nvidia-cuda-mps-control put on
// PATH records its arguments, environment and stdin, and a fake proxy
// records the environment the backend launches it with. RealGpuTest needs
// a GPU and a CUDA LibTorch (ctest label `gpu`; CI skips it).
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backend.grpc.pb.h"
#include "backend/mps_daemon_manager.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"

namespace tessera {
namespace testing {
namespace {

using ::testing::HasSubstr;

const std::string kBin = TESSERA_BIN_DIR;
const std::string kModels = TESSERA_MODEL_DIR;

void WriteScript(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  chmod(path.c_str(), 0755);
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// A fake MPS control binary on PATH and the log it writes.
class FakeMps : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/fake_mps_" + std::to_string(getpid()) +
           "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/bin");
    log_ = dir_ + "/mps.log";
    // -d "starts" the daemon (a marker in its pipe directory); a command
    // on stdin succeeds only while the daemon "runs".
    WriteScript(dir_ + "/bin/nvidia-cuda-mps-control", R"(#!/bin/sh
input=""
if [ "$1" != "-d" ]; then input=$(cat); fi
echo "args=$* gpu=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY pct=${CUDA_MPS_ACTIVE_THREAD_PERCENTAGE:-unset} stdin=$input" >> ")" +
                                                           log_ + R"("
if [ "$1" = "-d" ]; then touch "$CUDA_MPS_PIPE_DIRECTORY/control"; exit 0; fi
[ -e "$CUDA_MPS_PIPE_DIRECTORY/control" ] && exit 0
exit 1
)");
    old_path_ = getenv("PATH") ? getenv("PATH") : "";
    setenv("PATH", (dir_ + "/bin:" + old_path_).c_str(), 1);
  }
  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  std::vector<std::string> DaemonStarts() {
    std::vector<std::string> starts;
    for (const auto& l : Lines(log_)) {
      if (absl::StartsWith(l, "args=-d")) starts.push_back(l);
    }
    return starts;
  }

  std::string dir_, log_, old_path_;
};

TEST_F(FakeMps, OneDaemonPerGpuWithItsOwnPipeAndLogDirectories) {
  MpsDaemonManager::Options o;
  o.base_dir = dir_ + "/mps";
  {
    MpsDaemonManager mps(o);
    ASSERT_TRUE(mps.Ensure(0).ok());
    ASSERT_TRUE(mps.Ensure(0).ok());  // known to run: not even asked
    ASSERT_TRUE(mps.Ensure(1).ok());
  }
  auto starts = DaemonStarts();
  ASSERT_EQ(starts.size(), 2u) << absl::StrJoin(Lines(log_), "\n");
  EXPECT_THAT(starts[0], HasSubstr("gpu=0 pipe=" + o.base_dir +
                                   "/gpu0/pipe log=" + o.base_dir +
                                   "/gpu0/log pct=unset"));
  EXPECT_THAT(starts[1], HasSubstr("gpu=1 pipe=" + o.base_dir +
                                   "/gpu1/pipe log=" + o.base_dir +
                                   "/gpu1/log pct=unset"));
  EXPECT_TRUE(std::filesystem::is_directory(o.base_dir + "/gpu1/log"));
  // Never a server-wide default percentage.
  for (const auto& l : Lines(log_)) {
    EXPECT_THAT(l, ::testing::Not(HasSubstr("set_default_active_thread")));
  }
  // A new manager (a restarted backend) finds the daemons running.
  MpsDaemonManager again(o);
  ASSERT_TRUE(again.Ensure(0).ok());
  EXPECT_EQ(DaemonStarts().size(), 2u);
  EXPECT_THAT(Lines(log_).back(), HasSubstr("stdin=get_server_list"));

  const auto env = again.ProxyEnv(1, 37.5);
  EXPECT_EQ(env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "37.5");
  EXPECT_EQ(env.at("CUDA_VISIBLE_DEVICES"), "1");
  EXPECT_EQ(env.at("CUDA_MPS_PIPE_DIRECTORY"), o.base_dir + "/gpu1/pipe");
  EXPECT_EQ(again.ProxyEnv(0, 40).at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
            "40");
}

TEST_F(FakeMps, MissingControlBinaryIsAClearError) {
  MpsDaemonManager::Options o;
  o.base_dir = dir_ + "/mps";
  o.control_binary = "no-such-mps-control";
  MpsDaemonManager mps(o);
  absl::Status s = mps.Ensure(0);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no-such-mps-control -d"));
}

// The backend launches each CUDA proxy with its own GPU, MPS directories
// and active-thread percentage. The fake proxy records its environment and
// exits, so the plan fails to start (as it should) after the launch.
TEST_F(FakeMps, BackendLaunchesEachProxyWithItsOwnPercentage) {
  const std::string proxies = dir_ + "/proxies";
  std::filesystem::create_directories(proxies);
  WriteScript(dir_ + "/bin/fake_proxy", R"(#!/bin/sh
for a in "$@"; do case "$a" in --gpulet_id=*) id="${a#--gpulet_id=}";; esac; done
env | grep -E '^CUDA_(MPS|VISIBLE)' | sort > ")" +
                                            proxies +
                                            R"(/$id.env"
echo "$*" > ")" + proxies + R"(/$id.args"
exit 1
)");
  std::ofstream(dir_ + "/backend.pbtxt") << R"pb(
    id: "b"
    devices { id: "gpu0" kind: DEVICE_KIND_CUDA gpu_index: 0 }
    devices { id: "gpu1" kind: DEVICE_KIND_CUDA gpu_index: 1 }
  )pb";
  std::unique_ptr<Subprocess> backend;
  auto port = StartServer(
      kBin + "/tessera_backend",
      {"--config=" + dir_ + "/backend.pbtxt", "--model_repository=" + kModels,
       "--proxy_binary=" + dir_ + "/bin/fake_proxy",
       "--mps_dir=" + dir_ + "/mps"},
      dir_, "b", &backend, {{"PATH", dir_ + "/bin:" + old_path_}});
  ASSERT_TRUE(port.ok()) << port.status();
  auto stub = BackendService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", *port), grpc::InsecureChannelCredentials()));
  ApplyPlanRequest request;
  Plan* plan = request.mutable_plan();
  plan->set_epoch(1);
  for (const auto& [device, gpulets] : std::vector<
           std::pair<std::string, std::vector<std::pair<std::string, double>>>>{
           {"gpu0", {{"g30", 30}, {"g70", 70}}}, {"gpu1", {{"g100", 100}}}}) {
    DevicePlan* d = plan->add_devices();
    d->set_backend_id("b");
    d->set_device_id(device);
    for (const auto& [id, share] : gpulets) {
      GpuletPlan* g = d->add_gpulets();
      g->set_gpulet_id(id);
      g->set_share_percent(share);
      g->add_models()->set_model("lenet");
    }
  }
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
  ApplyPlanResponse response;
  grpc::Status s = stub->ApplyPlan(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("did not become ready"));

  auto env_of = [&](const std::string& id) {
    return absl::StrJoin(Lines(proxies + "/" + id + ".env"), " ");
  };
  const std::string mps = dir_ + "/mps";
  EXPECT_EQ(env_of("g30"),
            "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 CUDA_MPS_LOG_DIRECTORY=" +
                mps + "/gpu0/log CUDA_MPS_PIPE_DIRECTORY=" + mps +
                "/gpu0/pipe CUDA_VISIBLE_DEVICES=0");
  EXPECT_THAT(env_of("g70"), HasSubstr("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=70"));
  EXPECT_THAT(env_of("g70"), HasSubstr("CUDA_VISIBLE_DEVICES=0"));
  EXPECT_THAT(env_of("g100"),
              HasSubstr("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100"));
  EXPECT_THAT(env_of("g100"), HasSubstr("CUDA_VISIBLE_DEVICES=1"));
  EXPECT_THAT(env_of("g100"), HasSubstr(mps + "/gpu1/pipe"));
  EXPECT_THAT(absl::StrJoin(Lines(proxies + "/g30.args"), ""),
              HasSubstr("--gpulet_id=g30"));
  // One daemon per GPU, though three proxies started.
  EXPECT_EQ(DaemonStarts().size(), 2u) << absl::StrJoin(Lines(log_), "\n");
  backend->Stop(absl::Seconds(10));
}

// Needs a GPU, the MPS binaries and a CUDA build of LibTorch.
TEST(RealGpuTest, TwoGpuletsShareOneGpuThroughMps) {
  if (system("nvidia-smi > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no GPU visible (nvidia-smi failed)";
  }
  const std::string bin = EnvOr("TESSERA_GPU_BIN_DIR", kBin);
  const std::string models = EnvOr("TESSERA_GPU_MODEL_DIR", kModels);
  const std::string dir =
      ::testing::TempDir() + "/real_gpu_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/backend.pbtxt") << R"pb(
    id: "b"
    devices { id: "gpu0" kind: DEVICE_KIND_CUDA gpu_index: 0 }
  )pb";
  std::unique_ptr<Subprocess> backend;
  auto port =
      StartServer(bin + "/tessera_backend",
                  {"--config=" + dir + "/backend.pbtxt",
                   "--model_repository=" + models, "--mps_dir=" + dir + "/mps"},
                  dir, "b", &backend);
  ASSERT_TRUE(port.ok()) << port.status();
  auto stub = BackendService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", *port), grpc::InsecureChannelCredentials()));
  ApplyPlanRequest request;
  request.mutable_plan()->set_epoch(1);
  DevicePlan* d = request.mutable_plan()->add_devices();
  d->set_backend_id("b");
  d->set_device_id("gpu0");
  for (const auto& [id, share] :
       std::vector<std::pair<std::string, double>>{{"a", 40}, {"b", 60}}) {
    GpuletPlan* g = d->add_gpulets();
    g->set_gpulet_id(id);
    g->set_share_percent(share);
    g->add_models()->set_model("lenet");
  }
  grpc::ClientContext context;
  ApplyPlanResponse response;
  grpc::Status s = stub->ApplyPlan(&context, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.gpulets_size(), 2);
  // Each proxy ran LeNet on the GPU at warm-up, at its own MPS share.
  for (const GpuletStatus& g : response.gpulets()) {
    EXPECT_EQ(g.proxy_config().device_kind(), DEVICE_KIND_CUDA);
    EXPECT_TRUE(g.failed_models().empty()) << g.gpulet_id();
    ASSERT_GT(g.warmup_size(), 0) << g.gpulet_id();
    for (const MeasuredLatency& m : g.warmup()) {
      EXPECT_GT(m.latency_ms(), 0);
      std::cout << g.gpulet_id() << " " << g.share_percent() << "% "
                << m.model() << " b" << m.batch_size() << ": " << m.latency_ms()
                << " ms\n";
    }
  }
  backend->Stop(absl::Seconds(10));
}

}  // namespace
}  // namespace testing
}  // namespace tessera
