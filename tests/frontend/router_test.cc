// Router on in-memory batch sinks: a model's calls split by the plan's
// rates, the queue wait admission control reads, and shutdown's drain.
#include "frontend/router.h"

#include <memory>
#include <thread>

#include "gtest/gtest.h"
#include "tests/frontend/fake_batch_sink.h"

namespace tessera {
namespace {

using testing::Calls;
using testing::FakeSink;
using testing::MakeWorker;
using testing::Model;

// Installs an empty plan, which retires both workers, and lets their held
// batches go.
void RetireBoth(Router& router, const std::shared_ptr<GpuletWorker>& wa,
                FakeSink& a, const std::shared_ptr<GpuletWorker>& wb,
                FakeSink& b) {
  EXPECT_EQ(router.Install({}).size(), 2u);
  wa->Stop();
  wb->Stop();
  a.Release();
  b.Release();
  EXPECT_TRUE(wa->WaitIdle(absl::Seconds(30)));
  EXPECT_TRUE(wb->WaitIdle(absl::Seconds(30)));
}

TEST(RouterTest, SplitsAModelsCallsByThePlansRates) {
  const ModelConfig model = Model();
  FakeSink a(FakeSink::Mode::kHold), b(FakeSink::Mode::kHold);
  Calls calls(&model);
  Router router;
  std::unique_ptr<InferCall> early = calls.Make(-1, 0, 0);
  EXPECT_EQ(router.Submit(early).code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(early, nullptr);  // left with the caller
  FinishCall(std::move(early), absl::OkStatus());

  auto wa = MakeWorker("ga", &model, &a, 300);
  auto wb = MakeWorker("gb", &model, &b, 100);
  EXPECT_TRUE(router.Install({wa, wb}).empty());
  EXPECT_TRUE(router.Serves("m"));
  for (int i = 0; i < 400; ++i) {
    std::unique_ptr<InferCall> c = calls.Make(i, 0, 0);
    ASSERT_TRUE(router.Submit(c).ok());
  }
  // Smooth weighted round robin: exactly 3 to 1.
  EXPECT_EQ(a.items() + static_cast<int>(wa->queued()), 300);
  EXPECT_EQ(b.items() + static_cast<int>(wb->queued()), 100);
  // A new plan without them retires both.
  RetireBoth(router, wa, a, wb, b);
}

// A new call of a model finds the shortest queue wait of the gpulets that
// serve it.
TEST(RouterTest, QueueWaitIsTheShortestOverTheModelsGpulets) {
  const ModelConfig model = Model();
  FakeSink a(FakeSink::Mode::kHold), b(FakeSink::Mode::kHold);
  Calls calls(&model);
  Router router;
  EXPECT_EQ(router.QueueWait("m"), absl::ZeroDuration());  // no plan
  auto wa = MakeWorker("ga", &model, &a, 100);
  ASSERT_TRUE(router.Install({wa}).empty());
  // Held batches: two in flight, then the calls queue.
  for (int i = 0; i < 40; ++i) {
    std::unique_ptr<InferCall> c = calls.Make(i, 0, 0);
    ASSERT_TRUE(router.Submit(c).ok());
  }
  ASSERT_GT(wa->queued(), 0u);
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_GE(router.QueueWait("m"), absl::Milliseconds(50));
  EXPECT_EQ(router.QueueWait("other"), absl::ZeroDuration());
  // A second gpulet with nothing queued: a call could go there.
  auto wb = MakeWorker("gb", &model, &b, 100);
  ASSERT_TRUE(router.Install({wa, wb}).empty());
  EXPECT_EQ(router.QueueWait("m"), absl::ZeroDuration());

  RetireBoth(router, wa, a, wb, b);
}

// Shutdown's drain: it waits for the batches in flight to come back, and
// gives up at its deadline with the calls still queued counted.
TEST(RouterTest, DrainWaitsForBatchesInFlightUntilItsDeadline) {
  const ModelConfig model = Model();
  FakeSink sink(FakeSink::Mode::kHold);
  Calls calls(&model);
  Router router;
  auto worker = MakeWorker("g0", &model, &sink, 100);
  ASSERT_TRUE(router.Install({worker}).empty());
  for (int i = 0; i < 12; ++i) {
    std::unique_ptr<InferCall> c = calls.Make(i, 0, 0);
    ASSERT_TRUE(router.Submit(c).ok());
  }
  router.StopAccepting();
  // Held: the drain runs into its deadline.
  const absl::Time start = absl::Now();
  (void)router.Drain(start + absl::Milliseconds(100));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(100));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));  // and not much later
  EXPECT_FALSE(calls.AllFinished(12, absl::ZeroDuration()));
  // Released meanwhile: the drain returns once every call is answered.
  std::thread release([&] {
    absl::SleepFor(absl::Milliseconds(50));
    sink.Release();
  });
  EXPECT_EQ(router.Drain(absl::Now() + absl::Seconds(30)), 0u);
  release.join();
  ASSERT_TRUE(calls.AllFinished(12, absl::Seconds(30)));
  EXPECT_EQ(sink.items(), 12);
  worker->Stop();
  EXPECT_TRUE(worker->WaitIdle(absl::Seconds(30)));
}

}  // namespace
}  // namespace tessera
