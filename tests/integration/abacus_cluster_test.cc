// Abacus live: a frontend with --policy=abacus and a backend whose emulated
// GPU is an A100 running operator groups (the authors' group latencies as
// its ground truth, Tessera's predictor learned from groups sampled on it),
// serving the pair resnet101 + resnet152 through real processes on
// loopback. Every accepted request is answered: with its outputs, or with
// DEADLINE_EXCEEDED when the controller predicts it cannot make its target.
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/text_proto.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/integration/local_cluster.h"
#include "tools/group_profiler.h"
#include "tools/random_request.h"

namespace tessera {
namespace testing {
namespace {

const std::string kBin = TESSERA_BIN_DIR;
const std::string kRoot = TESSERA_SOURCE_DIR;
const std::string kA100Data = TESSERA_SHARED_DIR "/data/abacus-a100";

class AbacusClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/abacus_" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    // Tessera's predictor, learned from groups sampled on the emulated
    // A100 (never read from the authors' checkpoints).
    auto truth = A100GroundTruth::Create(kA100Data, 4);
    ASSERT_TRUE(truth.ok()) << truth.status();
    GroupProfilerOptions profile;
    profile.max_group_size = 2;
    profile.groups_per_size = 600;
    profile.runs = 30;
    std::vector<HeldoutError> errors;
    auto predictor =
        ProfileEmulatedA100(**truth, profile, MlpTrainerOptions{}, &errors);
    ASSERT_TRUE(predictor.ok()) << predictor.status();
    const std::string predictor_file = dir_ + "/a100-predictor.pbtxt";
    ASSERT_TRUE(WriteTextProto(predictor_file, *predictor).ok());
    auto repo =
        MakeSubsetRepository(kRoot + "/configs/emulated-a100/models",
                             {"resnet101", "resnet152"}, dir_ + "/models");
    ASSERT_TRUE(repo.ok()) << repo.status();

    LocalCluster::Options options;
    options.bin_dir = kBin;
    options.model_repository = *repo;
    options.frontend_config =
        "policy: \"abacus\"\ntime_scale: 1\nreplan_period_s: 30\n";
    options.extra_backend_flags = {"--emulated_gpus=1",
                                   "--time_scale=1",
                                   "--group_predictor=" + predictor_file,
                                   "--a100_ground_truth_dir=" + kA100Data,
                                   "--http_port=0",
                                   "--http_port_file=" + dir_ + "/http.port"};
    auto cluster = LocalCluster::Start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = std::move(*cluster);
    stub_ = cluster_->NewStub();
  }
  void TearDown() override {
    cluster_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Sends `per_thread` queries of batch 4 from each of `threads` threads
  // (alternating models), each with `deadline`; returns the status codes.
  std::map<grpc::StatusCode, int> Burst(int threads, int per_thread,
                                        absl::Duration deadline) {
    absl::Mutex mu;
    std::map<grpc::StatusCode, int> codes;
    std::vector<std::thread> senders;
    for (int t = 0; t < threads; ++t) {
      senders.emplace_back([&, t] {
        std::mt19937 rng(t);
        for (int i = 0; i < per_thread; ++i) {
          const std::string model = (t + i) % 2 ? "resnet152" : "resnet101";
          auto request = RandomRequestFor(stub_.get(), model, 4, &rng);
          ASSERT_TRUE(request.ok()) << request.status();
          MakeShapeOnly(&*request);
          grpc::ClientContext context;
          context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
          inference::ModelInferResponse response;
          grpc::Status s = stub_->ModelInfer(&context, *request, &response);
          if (s.ok()) {
            EXPECT_EQ(response.outputs_size(), 1);
            if (response.outputs_size() == 1) {
              EXPECT_EQ(response.outputs(0).shape(0), 4);
              EXPECT_EQ(response.outputs(0).shape(1), 1000);
            }
          }
          absl::MutexLock lock(&mu);
          ++codes[s.error_code()];
        }
      });
    }
    for (auto& s : senders) s.join();
    return codes;
  }

  // The sum of the backend's metric lines that start with `prefix` and
  // contain `label`.
  double BackendMetric(const std::string& prefix, const std::string& label) {
    int port = 0;
    std::ifstream(dir_ + "/http.port") >> port;
    httplib::Client http("127.0.0.1", port);
    http.set_read_timeout(5, 0);
    auto res = http.Get("/metrics");
    EXPECT_TRUE(res && res->status == 200);
    if (!res) return -1;
    double sum = 0;
    std::istringstream lines(res->body);
    for (std::string line; std::getline(lines, line);) {
      if (!absl::StartsWith(line, prefix) || !absl::StrContains(line, label)) {
        continue;
      }
      double v = 0;
      EXPECT_TRUE(absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v));
      sum += v;
    }
    return sum;
  }
  // Queries the backend itself answered DEADLINE_EXCEEDED: the
  // controller's drops.
  double BackendDrops() {
    return BackendMetric("tessera_backend_batches_total{",
                         "code=\"DEADLINE_EXCEEDED\"");
  }

  std::string dir_;
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

TEST_F(AbacusClusterTest, AnswersEveryQueryAndDropsOnlyThoseThatWouldMiss) {
  // Relaxed deadlines: every query is served, with its outputs.
  std::map<grpc::StatusCode, int> relaxed = Burst(4, 8, absl::Seconds(5));
  EXPECT_EQ(relaxed[grpc::StatusCode::OK], 32);
  // The pair's QoS target (160 ms) under a burst of 16 at once: each one
  // is served or refused with DEADLINE_EXCEEDED, nothing else.
  std::map<grpc::StatusCode, int> tight = Burst(16, 3, absl::Milliseconds(160));
  EXPECT_EQ(
      tight[grpc::StatusCode::OK] + tight[grpc::StatusCode::DEADLINE_EXCEEDED],
      48);
  EXPECT_GT(tight[grpc::StatusCode::OK], 0);
  // Far below either model's time alone at batch 4 (tens of ms): the
  // backend's controller drops them (not only the client's deadline).
  const double before = BackendDrops();
  std::map<grpc::StatusCode, int> hopeless = Burst(1, 4, absl::Milliseconds(8));
  EXPECT_EQ(hopeless[grpc::StatusCode::DEADLINE_EXCEEDED], 4);
  EXPECT_EQ(BackendDrops() - before, 4);
  // Groups of two ran (the pair overlapped), and every decision was timed.
  EXPECT_GT(BackendMetric("tessera_backend_groups_total{", "size=\"2\""), 0);
  EXPECT_EQ(BackendMetric("tessera_backend_groups_total{", ""),
            BackendMetric("tessera_backend_group_decision_seconds_count{", ""));
}

}  // namespace
}  // namespace testing
}  // namespace tessera
