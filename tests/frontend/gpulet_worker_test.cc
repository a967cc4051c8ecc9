// GpuletWorker on an in-memory batch sink: every call gets its own rows of
// the batch outputs, swap-stopped batches go back to routing, and retiring
// hands queued calls over.
#include "frontend/gpulet_worker.h"

#include <cstring>
#include <deque>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/status_proto.h"
#include "frontend/frontend_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/frontend/fake_batch_sink.h"

namespace tessera {
namespace {

using testing::Calls;
using testing::FakeSink;
using testing::MakeWorker;
using testing::Model;

TEST(GpuletWorkerTest, EachCallGetsItsOwnRowsOfTheBatch) {
  const ModelConfig model = Model();
  FakeSink sink;
  Calls calls(&model);
  auto worker = MakeWorker("g0", &model, &sink);
  for (int i = 0; i < 10; ++i) worker->Submit(calls.Make(i, i, 100 * i));
  ASSERT_TRUE(calls.AllFinished(10, absl::Seconds(30)));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(calls.Code(i), grpc::StatusCode::OK) << i;
    EXPECT_FLOAT_EQ(calls.Y(i), 101.0f * i) << i;
  }
  EXPECT_EQ(sink.items(), 10);
  EXPECT_TRUE(worker->WaitIdle(absl::Seconds(30)));
  worker->Stop();
}

TEST(GpuletWorkerTest, ABatchCarriesItsTightestDeadlineAsABudget) {
  const ModelConfig model = Model();
  FakeSink sink;
  Calls calls(&model);
  auto worker = MakeWorker("g0", &model, &sink);
  std::unique_ptr<InferCall> call = calls.Make(0, 1, 2);
  call->deadline = absl::Now() + absl::Seconds(3);
  worker->Submit(std::move(call));
  ASSERT_TRUE(calls.AllFinished(1, absl::Seconds(30)));
  const std::vector<double> budgets = sink.budgets_ms();
  ASSERT_EQ(budgets.size(), 1u);
  EXPECT_GT(budgets[0], 2000);
  EXPECT_LE(budgets[0], 3000);
  worker->Stop();
}

TEST(GpuletWorkerTest, OneBadCallFailsAloneAndTheRestOfItsBatchIsServed) {
  const ModelConfig model = Model();
  FakeSink sink(FakeSink::Mode::kHold);
  Calls calls(&model);
  auto worker = MakeWorker("g0", &model, &sink);
  // Held: the later calls queue up and go out in batches of 4; call 10's
  // input is one the model fails on.
  for (int i = 0; i < 20; ++i) {
    worker->Submit(calls.Make(i, i == 10 ? -1.0f : i, 100));
  }
  sink.Release();
  ASSERT_TRUE(calls.AllFinished(20, absl::Seconds(30)));
  for (int i = 0; i < 20; ++i) {
    if (i == 10) continue;
    EXPECT_EQ(calls.Code(i), grpc::StatusCode::OK) << i;
    EXPECT_FLOAT_EQ(calls.Y(i), i + 100.0f) << i;
  }
  EXPECT_EQ(calls.Code(10), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(worker->WaitIdle(absl::Seconds(30)));
  worker->Stop();
}

TEST(GpuletWorkerTest, SwapStoppedBatchesGoBackToRouting) {
  const ModelConfig model = Model();
  FakeSink sink(FakeSink::Mode::kSwapStopped);
  Calls calls(&model);
  absl::Mutex mu;
  std::vector<std::unique_ptr<InferCall>> retried;
  auto worker =
      MakeWorker("g0", &model, &sink, 0, [&](std::unique_ptr<InferCall> call) {
        absl::MutexLock lock(&mu);
        retried.push_back(std::move(call));
      });
  for (int i = 0; i < 3; ++i) worker->Submit(calls.Make(i, 1, 2));
  ASSERT_TRUE(worker->WaitIdle(absl::Seconds(30)));
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(retried.size(), 3u);  // none finished: they are routed again
  }
  EXPECT_FALSE(calls.AllFinished(1, absl::ZeroDuration()));
  worker->Stop();
  for (auto& call : retried) FinishCall(std::move(call), absl::OkStatus());
}

TEST(GpuletWorkerTest, RetireHandsQueuedCallsOverAndInFlightOnesFinish) {
  const ModelConfig model = Model();
  FakeSink sink(FakeSink::Mode::kHold);
  Calls calls(&model);
  auto worker = MakeWorker("g0", &model, &sink);
  for (int i = 0; i < 20; ++i) worker->Submit(calls.Make(i, i, 0));
  // Two batches (of up to 4) are in flight; the rest wait in the queue.
  EXPECT_FALSE(worker->WaitIdle(absl::Milliseconds(10)));
  std::vector<std::unique_ptr<InferCall>> forwarded;
  std::vector<std::unique_ptr<InferCall>> queued = worker->Retire(
      [&](std::unique_ptr<InferCall> c) { forwarded.push_back(std::move(c)); });
  const int in_flight = sink.items();
  EXPECT_GE(in_flight, 1);
  EXPECT_EQ(static_cast<int>(queued.size()) + in_flight, 20);
  // A call still routed here after the switch is forwarded.
  worker->Submit(calls.Make(99, 1, 1));
  EXPECT_EQ(forwarded.size(), 1u);
  sink.Release();
  ASSERT_TRUE(worker->WaitIdle(absl::Seconds(30)));
  ASSERT_TRUE(calls.AllFinished(in_flight, absl::Seconds(30)));
  for (auto& c : queued) FinishCall(std::move(c), absl::OkStatus());
  for (auto& c : forwarded) FinishCall(std::move(c), absl::OkStatus());
}

// A batch leaves the dispatcher's in-flight count before its calls are
// answered; the worker is still in use until its callback returns, so
// WaitIdle (after which the plan coordinator drops a retired worker) must
// wait for that too. Here the first call's answer blocks inside the
// callback, on the thread that released the batch.
TEST(GpuletWorkerTest, IsNotIdleWhileABatchIsStillBeingAnswered) {
  const ModelConfig model = Model();
  FakeSink sink(FakeSink::Mode::kHold);
  Calls calls(&model);
  auto worker = MakeWorker("g0", &model, &sink);
  absl::Notification answering, unblock;
  std::unique_ptr<InferCall> call = calls.Make(0, 1, 2);
  std::function<void(const grpc::Status&)> finish = std::move(call->finish);
  call->finish = [&, finish](const grpc::Status& s) {
    answering.Notify();
    unblock.WaitForNotification();
    finish(s);
  };
  worker->Submit(std::move(call));
  std::thread backend([&] { sink.Release(); });
  ASSERT_TRUE(answering.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_FALSE(worker->WaitIdle(absl::Milliseconds(100)))
      << "idle while its callback still answers calls";
  unblock.Notify();
  backend.join();
  EXPECT_TRUE(worker->WaitIdle(absl::Seconds(30)));
  ASSERT_TRUE(calls.AllFinished(1, absl::Seconds(30)));
  worker->Stop();
}

// A call's lateness is judged on the clock its arrival and deadline come
// from (the frontend's injected one), not on the wall clock.
TEST(GpuletWorkerTest, LatenessIsMeasuredOnTheCallsClock) {
  const ModelConfig model = Model();
  Calls calls(&model);
  FrontendMetrics metrics;
  // A day ahead of the wall clock: on the wall clock no deadline passes.
  FakeClock clock(absl::Now() + absl::Hours(24));
  for (int i = 0; i < 2; ++i) {
    std::unique_ptr<InferCall> call = calls.Make(i, 0, 0);
    call->metrics = &metrics;
    call->clock = &clock;
    call->arrival = clock.Now();
    call->deadline = clock.Now() + absl::Seconds(1);
    call->response->add_raw_output_contents();    // answered as-is
    if (i == 1) clock.Advance(absl::Seconds(2));  // past its deadline
    FinishCall(std::move(call), absl::OkStatus());
  }
  const std::string text = metrics.registry().Render();
  EXPECT_THAT(text, ::testing::HasSubstr(
                        "tessera_frontend_slo_violations_total{model=\"m\"} "
                        "1\n"));
}

}  // namespace
}  // namespace tessera
