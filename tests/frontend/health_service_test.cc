#include "frontend/health_service.h"

#include <atomic>
#include <memory>
#include <thread>

#include "absl/time/clock.h"
#include "common/async_call.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "health.grpc.pb.h"

namespace tessera {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

constexpr char kService[] = "inference.GRPCInferenceService";

// A server with the health service alone, on one event loop as in the
// frontend; readiness is a flag the test sets.
class HealthServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(false);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&async_);
    cq_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    health_.Arm(&async_, cq_.get(), &calls_);
    loop_ = std::thread([this] { RunCompletionQueue(cq_.get()); });
    stub_ = Health::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                            grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    health_.Shutdown();
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    int left = 0;
    EXPECT_TRUE(calls_.AwaitNone(absl::Seconds(10), &left)) << left;
    cq_->Shutdown();
    loop_.join();
  }
  static void Within(grpc::ClientContext* context, absl::Duration d) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + d));
  }
  grpc::Status Check(const std::string& service, HealthCheckResponse* out) {
    grpc::ClientContext context;
    Within(&context, absl::Seconds(10));
    HealthCheckRequest request;
    request.set_service(service);
    return stub_->Check(&context, request, out);
  }
  HealthCheckResponse::ServingStatus CheckStatus(const std::string& service) {
    HealthCheckResponse response;
    grpc::Status status = Check(service, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.status();
  }

  std::atomic<bool> ready_{false};
  HealthService health_{[this] { return ready_.load(); }, {kService}};
  HealthService::AsyncService async_;
  AsyncCallCount calls_;
  int port_ = 0;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::unique_ptr<grpc::Server> server_;
  std::thread loop_;
  std::unique_ptr<Health::Stub> stub_;
};

TEST_F(HealthServiceTest, CheckReadsReadinessAtEveryCall) {
  EXPECT_EQ(CheckStatus(""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(CheckStatus(kService), HealthCheckResponse::NOT_SERVING);
  ready_ = true;  // no Refresh: Check asks at once
  EXPECT_EQ(CheckStatus(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(CheckStatus(kService), HealthCheckResponse::SERVING);
  HealthCheckResponse response;
  grpc::Status unknown = Check("no.such.Service", &response);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(unknown.error_message().find("no.such.Service"), std::string::npos);
  health_.Shutdown();
  EXPECT_EQ(CheckStatus(""), HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthServiceTest, WatchSendsTheStatusThenEachChangeAndEndsAtShutdown) {
  grpc::ClientContext context;
  Within(&context, absl::Seconds(20));
  HealthCheckRequest request;
  request.set_service(kService);
  auto reader = stub_->Watch(&context, request);
  // The next message on the watch.
  auto next = [&reader] {
    HealthCheckResponse response;
    EXPECT_TRUE(reader->Read(&response));
    return response.status();
  };
  EXPECT_EQ(next(), HealthCheckResponse::NOT_SERVING);
  ready_ = true;
  health_.Refresh();
  EXPECT_EQ(next(), HealthCheckResponse::SERVING);
  // Refreshes without a change send nothing: the next message is the
  // next change.
  health_.Refresh();
  health_.Refresh();
  ready_ = false;
  health_.Refresh();
  EXPECT_EQ(next(), HealthCheckResponse::NOT_SERVING);
  ready_ = true;
  health_.Refresh();
  EXPECT_EQ(next(), HealthCheckResponse::SERVING);
  // Shutdown says NOT_SERVING and ends the watch (the server's own
  // shutdown then waits for no open stream).
  health_.Shutdown();
  EXPECT_EQ(next(), HealthCheckResponse::NOT_SERVING);
  HealthCheckResponse response;
  EXPECT_FALSE(reader->Read(&response));
  grpc::Status end = reader->Finish();
  EXPECT_TRUE(end.ok()) << end.error_message();
}

TEST_F(HealthServiceTest, AnUnknownServiceIsWatchedAsServiceUnknown) {
  grpc::ClientContext context;
  Within(&context, absl::Seconds(20));
  HealthCheckRequest request;
  request.set_service("no.such.Service");
  auto reader = stub_->Watch(&context, request);
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVICE_UNKNOWN);
  context.TryCancel();
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(HealthServiceTest, WatchesThatStartAfterShutdownEndAtOnce) {
  health_.Shutdown();
  grpc::ClientContext context;
  Within(&context, absl::Seconds(20));
  auto reader = stub_->Watch(&context, HealthCheckRequest());
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_TRUE(reader->Finish().ok());
}

// Watches cancelled by their clients and watches still open when the
// server stops are all freed (TearDown waits for every call object; the
// sanitizer build checks for leaks).
TEST_F(HealthServiceTest, CancelledAndOpenWatchesAreFreed) {
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<HealthCheckResponse>>> readers;
  for (int i = 0; i < 6; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    Within(contexts.back().get(), absl::Seconds(20));
    readers.push_back(
        stub_->Watch(contexts.back().get(), HealthCheckRequest()));
    HealthCheckResponse response;
    ASSERT_TRUE(readers.back()->Read(&response));
  }
  for (int i = 0; i < 3; ++i) {
    contexts[i]->TryCancel();
    EXPECT_EQ(readers[i]->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // Changes still reach the open ones.
  ready_ = true;
  health_.Refresh();
  for (int i = 3; i < 6; ++i) {
    HealthCheckResponse response;
    ASSERT_TRUE(readers[i]->Read(&response));
    EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  }
  // The server stops with three watches open (TearDown).
  server_->Shutdown(absl::ToChronoTime(absl::Now()));
  for (int i = 3; i < 6; ++i) {
    HealthCheckResponse response;
    while (readers[i]->Read(&response)) {
    }
    readers[i]->Finish();
  }
}

}  // namespace
}  // namespace tessera
