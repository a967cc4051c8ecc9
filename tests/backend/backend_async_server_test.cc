#include "backend/backend_async_server.h"

#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "backend/backend_service.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/backend/empty_backend.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// A backend without gpulets (testing::MakeEmptyBackend): the stream
// machinery is exercised without proxy processes.
class BackendAsyncServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = ::testing::TempDir() + "/tessera_async_server_repo_" +
            std::to_string(getpid());
    std::filesystem::create_directories(repo_);
    auto service = testing::MakeEmptyBackend("b0", repo_);
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = std::move(*service);
    auto server = BackendAsyncServer::Start({"127.0.0.1:0"}, service_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = BackendService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                            grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(absl::Seconds(1));
    std::error_code ec;
    std::filesystem::remove_all(repo_, ec);
  }

  static void SetDeadline(grpc::ClientContext* context) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
  }

  std::string repo_;
  std::unique_ptr<BackendServiceImpl> service_;
  std::unique_ptr<BackendAsyncServer> server_;
  std::unique_ptr<BackendService::Stub> stub_;
};

TEST_F(BackendAsyncServerTest, AnswersEveryBatchOfAStreamAndFinishes) {
  grpc::ClientContext context;
  SetDeadline(&context);
  auto stream = stub_->Execute(&context);
  constexpr int kBatches = 200;
  // Written from another thread while this one reads: the server reads
  // and answers concurrently.
  std::thread writer([&] {
    for (int i = 1; i <= kBatches; ++i) {
      BatchRequest batch;
      batch.set_batch_id(i);
      batch.set_gpulet_id(absl::StrCat("nowhere", i % 3));
      batch.set_model("m");
      ASSERT_TRUE(stream->Write(batch));
    }
    stream->WritesDone();
  });
  std::set<uint64_t> answered;
  BatchResponse response;
  while (stream->Read(&response)) {
    EXPECT_EQ(response.status().code(),
              static_cast<int>(absl::StatusCode::kUnavailable));
    EXPECT_THAT(response.status().message(),
                HasSubstr(absl::StrCat("'nowhere", response.batch_id() % 3,
                                       "' is not served by backend 'b0'")));
    EXPECT_TRUE(answered.insert(response.batch_id()).second)
        << "batch " << response.batch_id() << " answered twice";
  }
  writer.join();
  EXPECT_EQ(answered.size(), static_cast<size_t>(kBatches));
  EXPECT_EQ(*answered.begin(), 1u);
  EXPECT_EQ(*answered.rbegin(), static_cast<uint64_t>(kBatches));
  grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(BackendAsyncServerTest, ServesUnaryCallsInlineAndOnTheirOwnThreads) {
  // ApplyPlan runs on a thread of its own; Health inline on the loop.
  ApplyPlanRequest apply;
  apply.mutable_plan()->set_epoch(7);
  ApplyPlanResponse applied;
  grpc::ClientContext apply_context;
  SetDeadline(&apply_context);
  grpc::Status s = stub_->ApplyPlan(&apply_context, apply, &applied);
  ASSERT_TRUE(s.ok()) << s.error_message();

  HealthResponse health;
  grpc::ClientContext health_context;
  SetDeadline(&health_context);
  s = stub_->Health(&health_context, HealthRequest(), &health);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(health.epoch(), 7);
  EXPECT_EQ(health.num_proxies(), 0);
  EXPECT_FALSE(health.ready());

  // An error from a blocking method reaches the client as its status.
  CommitPlanRequest commit;
  commit.set_epoch(8);
  CommitPlanResponse committed;
  grpc::ClientContext commit_context;
  SetDeadline(&commit_context);
  s = stub_->CommitPlan(&commit_context, commit, &committed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("the plan in force is epoch 7"));

  NodeInfo info;
  grpc::ClientContext info_context;
  SetDeadline(&info_context);
  s = stub_->GetNodeInfo(&info_context, GetNodeInfoRequest(), &info);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(info.devices_size(), 1);
  EXPECT_EQ(info.backend_id(), "b0");
  EXPECT_EQ(info.devices(0).device_id(), "cpu0");
}

TEST_F(BackendAsyncServerTest, ShutdownEndsAnOpenStreamWithoutHanging) {
  grpc::ClientContext context;
  SetDeadline(&context);
  auto stream = stub_->Execute(&context);
  BatchRequest batch;
  batch.set_batch_id(1);
  batch.set_gpulet_id("g");
  ASSERT_TRUE(stream->Write(batch));
  BatchResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.batch_id(), 1u);

  // The stream stays open; Shutdown cancels it after the grace period.
  const absl::Time start = absl::Now();
  server_->Shutdown(absl::Milliseconds(100));
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(10));
  EXPECT_FALSE(stream->Read(&response));
  grpc::Status status = stream->Finish();
  EXPECT_FALSE(status.ok());
  server_.reset();
}

}  // namespace
}  // namespace tessera
