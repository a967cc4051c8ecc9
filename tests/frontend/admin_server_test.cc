#include "frontend/admin_server.h"

#include <memory>
#include <thread>

#include "admin.grpc.pb.h"
#include "common/async_call.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

// The admin port refuses calls without the token before it touches the
// frontend (null here), and shuts down with the queue it owns drained.
TEST(AdminServerTest, ListensOnAPortItPicksAndRefusesCallsWithoutTheToken) {
  // The frontend's event loop: with one epoll set it also serves the
  // admin port's events.
  grpc::CompletionQueue loop_cq;
  std::thread loop([&] { RunCompletionQueue(&loop_cq); });
  auto admin = AdminServer::Start(
      "127.0.0.1:0", grpc::InsecureServerCredentials(),
      /*frontend=*/nullptr, SharedSecret("0123456789abcdef-token"));
  ASSERT_TRUE(admin.ok()) << admin.status();
  ASSERT_GT((*admin)->port(), 0);

  auto stub = AdminService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string((*admin)->port()),
                          grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    AdminStatus status;
    EXPECT_EQ(
        stub->GetStatus(&context, GetStatusRequest(), &status).error_code(),
        grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    SharedSecret("another-token-of-16+").Attach(&context);
    SetPolicyResponse response;
    SetPolicyRequest request;
    request.set_policy("sbp");
    EXPECT_EQ(stub->SetPolicy(&context, request, &response).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  (*admin)->Shutdown(absl::Now() + absl::Seconds(2));
  (*admin)->Shutdown(absl::Now());  // idempotent
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    ReplanResponse response;
    EXPECT_EQ(stub->Replan(&context, ReplanRequest(), &response).error_code(),
              grpc::StatusCode::UNAVAILABLE);
  }
  admin->reset();
  loop_cq.Shutdown();
  loop.join();
}

TEST(AdminServerTest, AnAddressItCannotBindIsUnavailable) {
  auto admin =
      AdminServer::Start("256.0.0.1:0", grpc::InsecureServerCredentials(),
                         nullptr, SharedSecret());
  EXPECT_EQ(admin.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera
