#include "frontend/backend_client.h"

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "backend/backend_async_server.h"
#include "common/async_call.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/empty_backend.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

// Sends one batch and waits (at most 20 s) for its callback, which must
// come exactly once.
absl::Status SendOne(BackendClient* client, std::atomic<int>* callbacks) {
  BatchRequest batch;
  batch.set_gpulet_id("g");
  batch.set_model("m");
  auto done = std::make_shared<absl::Notification>();
  auto result = std::make_shared<absl::Status>();
  client->Send(batch,
               [done, result, callbacks](absl::Status status, BatchResponse) {
                 ++*callbacks;
                 *result = std::move(status);
                 done->Notify();
               });
  if (!done->WaitForNotificationWithTimeout(absl::Seconds(20))) {
    return absl::DeadlineExceededError("no callback within 20 s");
  }
  return *result;
}

// What the backend itself answers for a gpulet it does not serve.
constexpr char kNotServed[] = "'g' is not served by backend 'b0'";

// Sends until a batch gets `code` with `message` in it (the stream
// connects, breaks or comes back in the background), for at most 30 s.
absl::Status SendUntil(BackendClient* client, absl::StatusCode code,
                       absl::string_view message, std::atomic<int>* callbacks,
                       int* sent) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::Status status;
  while (absl::Now() < deadline) {
    status = SendOne(client, callbacks);
    ++*sent;
    if (status.code() == code && absl::StrContains(status.message(), message)) {
      return status;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return status;
}

// Both ways the client runs: polling a completion queue of its own, or the
// caller's (the frontend's event loop; here a thread of the test).
class BackendClientTest : public ::testing::TestWithParam<bool> {};

TEST_P(BackendClientTest, StreamsBatchesAndReconnectsAfterTheBackendRestarts) {
  const bool callers_queue = GetParam();
  grpc::CompletionQueue cq;
  std::thread loop;
  if (callers_queue) loop = std::thread([&cq] { RunCompletionQueue(&cq); });
  const std::string repo = ::testing::TempDir() +
                           "/tessera_backend_client_repo_" +
                           std::to_string(getpid());
  std::filesystem::create_directories(repo);
  auto service = testing::MakeEmptyBackend("b0", repo);
  ASSERT_TRUE(service.ok()) << service.status();
  auto server = BackendAsyncServer::Start({"127.0.0.1:0"}, service->get());
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  const std::string address = absl::StrCat("127.0.0.1:", port);

  BackendClient client("b0", address, callers_queue ? &cq : nullptr);
  std::atomic<int> callbacks{0};
  int sent = 0;
  // Answered by the backend itself: the batch crossed the stream.
  absl::Status s = SendUntil(&client, absl::StatusCode::kUnavailable,
                             kNotServed, &callbacks, &sent);
  ASSERT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr(kNotServed));

  // The backend goes away: batches fail UNAVAILABLE, none hangs.
  (*server)->Shutdown(absl::ZeroDuration());
  server->reset();
  s = SendUntil(&client, absl::StatusCode::kUnavailable, "", &callbacks, &sent);
  ASSERT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("backend 'b0'"));

  // It comes back on the same port: the client opens a new stream.
  auto again = BackendAsyncServer::Start({address}, service->get());
  ASSERT_TRUE(again.ok()) << again.status();
  s = SendUntil(&client, absl::StatusCode::kUnavailable, kNotServed, &callbacks,
                &sent);
  EXPECT_THAT(s.message(), HasSubstr(kNotServed)) << s;

  client.Shutdown();
  s = SendOne(&client, &callbacks);
  ++sent;
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(callbacks.load(), sent);  // every batch answered exactly once
  (*again)->Shutdown(absl::ZeroDuration());
  cq.Shutdown();
  if (loop.joinable()) loop.join();
  RunCompletionQueue(&cq);  // drains it (nothing was pending without loop)
  std::error_code ec;
  std::filesystem::remove_all(repo, ec);
}

INSTANTIATE_TEST_SUITE_P(Queues, BackendClientTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "CallersQueue" : "OwnQueue";
                         });

}  // namespace
}  // namespace tessera
