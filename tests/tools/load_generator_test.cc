// The load generator on its own. A schedule faster than this machine can
// send must still stop at the run's duration and say what it did not
// send (the calls go to a loopback port nothing listens on, so each ends
// at once with UNAVAILABLE); a throttled client sends few of them. Over
// streams, against an in-process server, every request is reported once
// with its answer's code, matched by id.
#include "tools/load_generator.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// A loopback port that was free a moment ago (bound, then closed).
int ClosedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::unique_ptr<inference::GRPCInferenceService::Stub> ClosedPortStub() {
  return inference::GRPCInferenceService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", ClosedPort()),
                          grpc::InsecureChannelCredentials()));
}

// Model "m" at `rate_rps`, open loop.
LoadGenerator::ModelLoad PoissonLoad(double rate_rps) {
  LoadGenerator::ModelLoad load;
  load.model = "m";
  load.request.set_model_name("m");
  load.schedule = {{absl::ZeroDuration(), rate_rps}};
  return load;
}

TEST(LoadGeneratorTest, ALaggingSenderStopsAtTheDurationAndCountsTheRest) {
  auto stub = ClosedPortStub();
  // Five million requests a second: far more than one thread sends.
  const LoadGenerator::ModelLoad load = PoissonLoad(5e6);
  LoadGenerator::Options options;
  options.duration = absl::Milliseconds(500);
  options.timeout = absl::Seconds(5);
  const LoadGenerator::Result result =
      LoadGenerator::Run(stub.get(), {load}, options);
  ASSERT_GT(result.sent, 0);
  EXPECT_GT(result.unsent, 0) << "the schedule was kept up with";
  // sent + unsent is the schedule: about 2.5 million arrivals.
  EXPECT_NEAR(static_cast<double>(result.sent + result.unsent), 2.5e6, 2e4);
  // Nothing was sent after the duration (a little slack for the clock
  // read between the check and the send).
  for (const LoadGenerator::Record& r : result.records) {
    ASSERT_LT(r.sent, options.duration + absl::Milliseconds(20));
  }
  EXPECT_EQ(result.lost, 0);
}

// Every call to a closed port is refused (UNAVAILABLE): a throttled
// client stops sending most of its requests, answers them itself at once
// with RESOURCE_EXHAUSTED, and still sends some (to see the server come
// back). Without the throttle, every request is sent.
TEST(LoadGeneratorTest, AThrottledClientRefusesLocallyWhatTheServerRefuses) {
  auto stub = ClosedPortStub();
  const LoadGenerator::ModelLoad load = PoissonLoad(2000);
  LoadGenerator::Options options;
  options.duration = absl::Seconds(1);
  options.timeout = absl::Seconds(5);
  const LoadGenerator::Result plain =
      LoadGenerator::Run(stub.get(), {load}, options);
  ASSERT_GT(plain.sent, 1000);
  EXPECT_EQ(plain.throttled, 0);
  // What the refusal said, once per code (gRPC's own connection error).
  ASSERT_EQ(plain.first_messages.size(), 1u);
  const std::string& said =
      plain.first_messages.at(absl::StatusCode::kUnavailable);
  EXPECT_FALSE(said.empty());
  EXPECT_LE(said.size(), LoadGenerator::kMaxMessageBytes);
  options.throttle_k = 2;
  const LoadGenerator::Result throttled =
      LoadGenerator::Run(stub.get(), {load}, options);
  ASSERT_GT(throttled.sent, 1000);
  EXPECT_GT(throttled.throttled, throttled.sent * 9 / 10);
  EXPECT_LT(throttled.throttled, throttled.sent);
  int64_t marked = 0;
  for (const LoadGenerator::Record& r : throttled.records) {
    if (!r.throttled) {
      EXPECT_EQ(r.code, absl::StatusCode::kUnavailable);
      continue;
    }
    ++marked;
    EXPECT_EQ(r.code, absl::StatusCode::kResourceExhausted);
    EXPECT_LT(r.latency, absl::Milliseconds(100));
  }
  EXPECT_EQ(marked, throttled.throttled);
  EXPECT_EQ(throttled.lost, 0);
}

// A ModelStreamInfer server: answers a request with an even id OK and one
// with an odd id RESOURCE_EXHAUSTED (error_message and the
// tessera.status_code parameter), in pairs and in reverse order (so the
// generator must match answers by id), each after `delay`. Records the
// requests' timeout parameters.
class PairSwappingServer final
    : public inference::GRPCInferenceService::Service {
 public:
  explicit PairSwappingServer(absl::Duration delay) : delay_(delay) {}

  grpc::Status ModelStreamInfer(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<inference::ModelStreamInferResponse,
                               inference::ModelInferRequest>* stream) override {
    std::vector<inference::ModelInferRequest> held;
    inference::ModelInferRequest request;
    auto answer_held = [&] {
      for (auto it = held.rbegin(); it != held.rend(); ++it) {
        absl::SleepFor(delay_);
        inference::ModelStreamInferResponse answer;
        answer.mutable_infer_response()->set_id(it->id());
        int64_t id = 0;
        if (!absl::SimpleAtoi(it->id(), &id) || id % 2 == 1) {
          answer.set_error_message("the queue is full");
          (*answer.mutable_infer_response()
                ->mutable_parameters())["tessera.status_code"]
              .set_int64_param(grpc::StatusCode::RESOURCE_EXHAUSTED);
        }
        if (!stream->Write(answer)) return false;
      }
      held.clear();
      return true;
    };
    while (stream->Read(&request)) {
      {
        absl::MutexLock lock(&mu_);
        auto it = request.parameters().find("timeout");
        timeouts_.push_back(
            it == request.parameters().end() ? -1 : it->second.int64_param());
      }
      held.push_back(request);
      if (held.size() == 2 && !answer_held()) return grpc::Status::CANCELLED;
    }
    answer_held();
    return context->IsCancelled() ? grpc::Status::CANCELLED : grpc::Status::OK;
  }

  std::vector<int64_t> timeouts() {
    absl::MutexLock lock(&mu_);
    return timeouts_;
  }

 private:
  const absl::Duration delay_;
  absl::Mutex mu_;
  std::vector<int64_t> timeouts_ ABSL_GUARDED_BY(mu_);
};

class StreamLoadTest : public ::testing::Test {
 protected:
  void Start(absl::Duration delay) {
    service_ = std::make_unique<PairSwappingServer>(delay);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(port, 0);
    stub_ = inference::GRPCInferenceService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(absl::ToChronoTime(absl::Now()));
  }
  // Model "m" at `rate` for `duration` over `streams` streams.
  LoadGenerator::Result RunStreams(double rate, absl::Duration duration,
                                   absl::Duration timeout, int streams) {
    LoadGenerator::ModelLoad load;
    load.model = "m";
    load.request.set_model_name("m");
    load.schedule = {{absl::ZeroDuration(), rate}};
    LoadGenerator::Options options;
    options.duration = duration;
    options.timeout = timeout;
    options.streams_per_model = streams;
    return LoadGenerator::Run(stub_.get(), {load}, options);
  }

  std::unique_ptr<PairSwappingServer> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

TEST_F(StreamLoadTest, EveryRequestIsReportedOnceWithItsAnswersCode) {
  Start(absl::ZeroDuration());
  const LoadGenerator::Result result =
      RunStreams(400, absl::Milliseconds(500), absl::Seconds(5), /*streams=*/2);
  ASSERT_GT(result.sent, 100);
  EXPECT_EQ(result.lost, 0);
  ASSERT_EQ(static_cast<int64_t>(result.records.size()), result.sent);
  // The k-th request sent went to lane k % 2 with id k / 2 there; odd ids
  // were refused. Answers came back in swapped pairs: matching them in
  // arrival order would flip every code.
  for (size_t k = 0; k < result.records.size(); ++k) {
    const LoadGenerator::Record& r = result.records[k];
    ASSERT_EQ(r.code, (k / 2) % 2 == 1 ? absl::StatusCode::kResourceExhausted
                                       : absl::StatusCode::kOk)
        << "request " << k;
    EXPECT_LT(r.latency, absl::Seconds(1));
  }
  // Each request carried its timeout in microseconds (Triton's parameter).
  const std::vector<int64_t> timeouts = service_->timeouts();
  ASSERT_EQ(static_cast<int64_t>(timeouts.size()), result.sent);
  for (int64_t t : timeouts) ASSERT_EQ(t, 5'000'000);
}

TEST_F(StreamLoadTest, AnAnswerAfterTheTimeoutIsLost) {
  Start(absl::Milliseconds(300));
  const LoadGenerator::Result result = RunStreams(
      100, absl::Milliseconds(100), absl::Milliseconds(200), /*streams=*/1);
  ASSERT_GT(result.sent, 0);
  // Every answer came at least 300 ms after its request: none in time.
  EXPECT_EQ(result.lost, result.sent);
  for (const LoadGenerator::Record& r : result.records) {
    EXPECT_EQ(r.code, absl::StatusCode::kDeadlineExceeded);
  }
}

}  // namespace
}  // namespace tessera
