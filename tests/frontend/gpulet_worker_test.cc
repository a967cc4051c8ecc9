// GpuletWorker and Router on an in-memory batch sink: every call gets its
// own rows of the batch outputs, swap-stopped batches go back to routing,
// retiring hands queued calls over, and the router splits a model's calls
// by the plan's rates.
#include "frontend/gpulet_worker.h"

#include <cstring>
#include <deque>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/status_proto.h"
#include "frontend/frontend_metrics.h"
#include "frontend/router.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

ModelConfig Model() {
  ModelConfig m;
  m.set_name("m");
  m.set_max_batch_size(4);
  m.set_slo_ms(10000);
  TensorConfig* x = m.add_input();
  x->set_name("x");
  x->set_data_type(TYPE_FP32);
  x->add_dims(-1);
  x->add_dims(2);
  TensorConfig* y = m.add_output();
  y->set_name("y");
  y->set_data_type(TYPE_FP32);
  y->add_dims(-1);
  y->add_dims(1);
  return m;
}

// Answers each batch at once with y = x0 + x1 per row (or holds it until
// Release(), or fails it as swap-stopped); counts the calls' items.
class FakeSink final : public BatchSink {
 public:
  enum class Mode { kAnswer, kHold, kSwapStopped };
  explicit FakeSink(Mode mode = Mode::kAnswer) : mode_(mode) {}

  void Send(BatchRequest batch, Callback done) override {
    bool swap_stopped = false;
    {
      absl::MutexLock lock(&mu_);
      swap_stopped = mode_ == Mode::kSwapStopped;
      items_ += batch.inputs(0).shape(0);
      ++batches_;
      budgets_ms_.push_back(batch.deadline_budget_ms());
      if (mode_ == Mode::kHold) {
        held_.push_back({std::move(batch), std::move(done)});
        return;
      }
    }
    Answer(batch, done, swap_stopped);
  }
  void Release() {
    std::deque<std::pair<BatchRequest, Callback>> held;
    {
      absl::MutexLock lock(&mu_);
      mode_ = Mode::kAnswer;
      held.swap(held_);
    }
    for (auto& [batch, done] : held) Answer(batch, done, false);
  }
  int items() const {
    absl::MutexLock lock(&mu_);
    return items_;
  }
  // The deadline budget of every batch sent so far.
  std::vector<double> budgets_ms() const {
    absl::MutexLock lock(&mu_);
    return budgets_ms_;
  }

 private:
  static void Answer(const BatchRequest& batch, const Callback& done,
                     bool swap_stopped) {
    BatchResponse r;
    r.set_batch_id(batch.batch_id());
    // A negative x0 is input the model cannot take: the whole batch fails,
    // as a TorchScript error does.
    const int64_t n = batch.inputs(0).shape(0);
    std::vector<float> in(n * 2);
    std::memcpy(in.data(), batch.inputs(0).data().data(), in.size() * 4);
    for (int64_t i = 0; i < n; ++i) {
      if (in[2 * i] < 0) {
        absl::Status s = absl::InternalError(
            "model 'm' failed: RuntimeError: index out of range in self");
        ToStatusProto(s, r.mutable_status());
        done(s, r);
        return;
      }
    }
    if (swap_stopped) {
      r.set_gpulet_stopped(true);
      absl::Status s = absl::UnavailableError("stopped for a swap");
      ToStatusProto(s, r.mutable_status());
      done(s, r);
      return;
    }
    const int64_t rows = batch.inputs(0).shape(0);
    std::vector<float> x(rows * 2), y(rows);
    std::memcpy(x.data(), batch.inputs(0).data().data(), x.size() * 4);
    for (int64_t i = 0; i < rows; ++i) y[i] = x[2 * i] + x[2 * i + 1];
    Tensor* out = r.add_outputs();
    out->set_name("y");
    out->set_data_type(TYPE_FP32);
    out->add_shape(rows);
    out->add_shape(1);
    out->set_data(
        std::string(reinterpret_cast<const char*>(y.data()), y.size() * 4));
    done(absl::OkStatus(), r);
  }

  mutable absl::Mutex mu_;
  Mode mode_ ABSL_GUARDED_BY(mu_);
  int items_ ABSL_GUARDED_BY(mu_) = 0;
  int batches_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<double> budgets_ms_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<BatchRequest, Callback>> held_ ABSL_GUARDED_BY(mu_);
};

// Calls with their gRPC request and response, and how each was finished.
class Calls {
 public:
  explicit Calls(const ModelConfig* config) : config_(config) {}

  // A one-item call with input (a, b).
  std::unique_ptr<InferCall> Make(int id, float a, float b) {
    auto slot = std::make_unique<Slot>();
    slot->data.resize(8);
    std::memcpy(slot->data.data(), &a, 4);
    std::memcpy(slot->data.data() + 4, &b, 4);
    auto call = std::make_unique<InferCall>();
    call->request = &slot->request;
    call->response = &slot->response;
    call->config = config_;
    call->decoded.items = 1;
    call->decoded.inputs = {slot->data};
    call->decoded.outputs = {0};
    call->arrival = absl::Now();
    call->deadline = absl::Now() + absl::Seconds(60);
    Slot* raw = slot.get();
    call->finish = [this, raw](const grpc::Status& s) {
      absl::MutexLock lock(&mu_);
      raw->code = s.error_code();
      raw->finished = true;
    };
    absl::MutexLock lock(&mu_);
    slots_[id] = std::move(slot);
    return call;
  }
  bool AllFinished(int n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto done = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      int finished = 0;
      for (const auto& [id, s] : slots_) finished += s->finished;
      return finished >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
  }
  // The call's y, or NaN if it has none.
  float Y(int id) {
    absl::MutexLock lock(&mu_);
    const Slot& s = *slots_.at(id);
    if (s.response.raw_output_contents_size() != 1 ||
        s.response.raw_output_contents(0).size() != 4) {
      return std::nanf("");
    }
    float y;
    std::memcpy(&y, s.response.raw_output_contents(0).data(), 4);
    return y;
  }
  grpc::StatusCode Code(int id) {
    absl::MutexLock lock(&mu_);
    return slots_.at(id)->code;
  }

 private:
  struct Slot {
    inference::ModelInferRequest request;
    inference::ModelInferResponse response;
    std::string data;
    grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
    bool finished = false;
  };
  const ModelConfig* config_;
  absl::Mutex mu_;
  std::map<int, std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
};

std::shared_ptr<GpuletWorker> MakeWorker(const std::string& id,
                                         const ModelConfig* config,
                                         BatchSink* sink, double rate = 0,
                                         GpuletWorker::Forward retry = {}) {
  GpuletWorker::Options wo;
  wo.backend_id = "b0";
  wo.device_id = "d0";
  wo.gpulet.set_gpulet_id(id);
  wo.gpulet.set_share_percent(100);
  ModelAssignment* a = wo.gpulet.add_models();
  a->set_model("m");
  a->set_batch_size(4);
  a->set_rate_rps(rate);
  wo.epoch = 1;
  wo.configs["m"] = config;
  wo.retry = std::move(retry);
  LatencyEstimator estimator;
  return std::make_shared<GpuletWorker>(std::move(wo), sink, RealClock::Get(),
                                        std::move(estimator));
}

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
  EXPECT_EQ(router.Install({}).size(), 2u);
  wa->Stop();
  wb->Stop();
  a.Release();
  b.Release();
  EXPECT_TRUE(wa->WaitIdle(absl::Seconds(30)));
  EXPECT_TRUE(wb->WaitIdle(absl::Seconds(30)));
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
