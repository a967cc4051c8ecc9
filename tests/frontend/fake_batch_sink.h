#pragma once

// The frontend's data path without processes: a model with one FP32 input
// pair and one output, an in-memory BatchSink that answers y = x0 + x1 per
// row (or holds, or fails batches as swap-stopped), calls that record how
// they were finished, and a GpuletWorker on such a sink.
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/status_proto.h"
#include "frontend/gpulet_worker.h"

namespace tessera {
namespace testing {

inline ModelConfig Model() {
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

inline std::shared_ptr<GpuletWorker> MakeWorker(
    const std::string& id, const ModelConfig* config, BatchSink* sink,
    double rate = 0, GpuletWorker::Forward retry = {}) {
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

}  // namespace testing
}  // namespace tessera
