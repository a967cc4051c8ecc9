// The load generator on its own: a schedule faster than this machine can
// send must still stop at the run's duration and say what it did not
// send. The calls go to a loopback port nothing listens on, so each ends
// at once with UNAVAILABLE.
#include "tools/load_generator.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
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

TEST(LoadGeneratorTest, ALaggingSenderStopsAtTheDurationAndCountsTheRest) {
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", ClosedPort()),
                                     grpc::InsecureChannelCredentials());
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  LoadGenerator::ModelLoad load;
  load.model = "m";
  load.request.set_model_name("m");
  // Five million requests a second: far more than one thread sends.
  load.schedule = {{absl::ZeroDuration(), 5e6}};
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

}  // namespace
}  // namespace tessera
