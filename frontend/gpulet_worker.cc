#include "frontend/gpulet_worker.h"

#include "absl/strings/str_cat.h"
#include "common/data_type.h"
#include "common/gpulet_id.h"
#include "common/grpc_status_util.h"
#include "frontend/frontend_metrics.h"
#include "frontend/request_codec.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

std::vector<Dispatcher::ModelSlot> Slots(
    const GpuletPlan& gpulet,
    const std::map<std::string, const ModelConfig*>& configs) {
  std::vector<Dispatcher::ModelSlot> slots;
  for (const ModelAssignment& a : gpulet.models()) {
    auto it = configs.find(a.model());
    slots.push_back(Dispatcher::ModelSlot::For(
        a, it != configs.end() ? it->second : nullptr));
  }
  return slots;
}

}  // namespace

void FinishCall(std::unique_ptr<InferCall> call, const absl::Status& status) {
  if (call->metrics != nullptr) {
    const Clock* clock =
        call->clock != nullptr ? call->clock : RealClock::Get();
    const absl::Time now = clock->Now();
    call->metrics->RecordRequest(
        call->config->name(), status.code(), now - call->arrival,
        (status.ok() && now > call->deadline) ||
            absl::IsDeadlineExceeded(status),
        {call->version, call->decoded.items, call->queued, call->executed});
  }
  if (status.ok()) {
    call->response->set_model_name(call->config->name());
    call->response->set_model_version(call->version);
    call->response->set_id(call->request->id());
  }
  call->finish(ToGrpcStatus(status));
}

GpuletWorker::GpuletWorker(Options options, BatchSink* backend,
                           const Clock* clock, LatencyEstimator estimator)
    : options_(std::move(options)),
      backend_(backend),
      clock_(clock),
      estimator_(std::move(estimator)),
      dispatcher_(Slots(options_.gpulet, options_.configs), &estimator_, clock,
                  options_.dispatch) {
  for (int i = 0; i < options_.gpulet.models_size(); ++i) {
    const std::string& name = options_.gpulet.models(i).model();
    model_index_[name] = i;
    model_configs_.push_back(options_.configs.at(name));
  }
  thread_ = std::thread([this] { Loop(); });
}

GpuletWorker::~GpuletWorker() { Stop(); }

void GpuletWorker::Submit(std::unique_ptr<InferCall> call) {
  Actions actions;
  Forward forward;
  {
    absl::MutexLock lock(&mu_);
    forward = forward_;
    if (!stopping_) {
      DispatchRequest r;
      r.id = next_call_id_++;
      r.model = model_index_.at(call->config->name());
      r.items = call->decoded.items;
      r.arrival = call->arrival;
      r.deadline = call->deadline;
      calls_[r.id] = std::move(call);
      dispatcher_.Enqueue(r);
      actions = PollLocked();
    }
  }
  if (call != nullptr) {
    if (forward) {
      forward(std::move(call));  // retired: to the gpulets that replace it
      return;
    }
    FinishCall(std::move(call),
               absl::UnavailableError(absl::StrCat(
                   "gpulet '", gpulet_id(), "' is being replaced; retry")));
    return;
  }
  Execute(std::move(actions));
}

std::vector<std::unique_ptr<InferCall>> GpuletWorker::Retire(Forward forward) {
  {
    absl::MutexLock lock(&mu_);
    forward_ = std::move(forward);
  }
  return StopDispatching();
}

std::vector<std::unique_ptr<InferCall>> GpuletWorker::StopDispatching() {
  std::vector<std::unique_ptr<InferCall>> queued;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return queued;
    stopping_ = true;
    for (const DispatchRequest& r : dispatcher_.TakeAll()) {
      queued.push_back(std::move(calls_[r.id]));
      calls_.erase(r.id);
    }
  }
  if (thread_.joinable()) thread_.join();
  return queued;
}

GpuletWorker::Actions GpuletWorker::PollLocked() {
  Actions actions;
  Dispatcher::Decision decision = dispatcher_.Poll();
  for (const DispatchRequest& r : decision.expired) {
    auto it = calls_.find(r.id);
    actions.expired.push_back(std::move(it->second));
    calls_.erase(it);
  }
  for (FormedBatch& b : decision.batches) {
    std::vector<std::unique_ptr<InferCall>> calls;
    for (const DispatchRequest& r : b.requests) {
      auto it = calls_.find(r.id);
      calls.push_back(std::move(it->second));
      calls_.erase(it);
    }
    actions.batches.emplace_back(std::move(b), std::move(calls));
  }
  // The timer thread sleeps until armed_wake_; wake it only if this poll
  // needs an earlier wake-up.
  next_wake_ = decision.wake_at;
  if (next_wake_ < armed_wake_) dirty_ = true;
  return actions;
}

void GpuletWorker::Execute(Actions actions) {
  for (auto& call : actions.expired) {
    const std::string model = call->config->name();
    ++answered_;
    ++late_;
    FinishCall(std::move(call),
               absl::DeadlineExceededError(absl::StrCat(
                   "request for model '", model,
                   "' cannot meet its deadline (SLO or client deadline) on "
                   "gpulet '",
                   gpulet_id(), "'; rejected before execution")));
  }
  for (auto& [batch, calls] : actions.batches) {
    SendBatch(batch, std::move(calls));
  }
}

void GpuletWorker::Loop() {
  while (true) {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return dirty_ || stopping_;
      };
      armed_wake_ = next_wake_;
      if (armed_wake_ == absl::InfiniteFuture()) {
        mu_.Await(absl::Condition(&wake));
      } else {
        // Wall-clock wait; the clock only decides what is due.
        mu_.AwaitWithDeadline(absl::Condition(&wake), armed_wake_);
      }
      armed_wake_ = absl::InfiniteFuture();
      if (stopping_) return;
      actions = PollLocked();
      dirty_ = false;  // this thread re-arms with next_wake_ right away
    }
    Execute(std::move(actions));
  }
}

BatchRequest GpuletWorker::MakeRequest(
    const ModelConfig& config, int items,
    const std::vector<const InferCall*>& calls) const {
  BatchRequest request;
  request.set_epoch(options_.epoch);
  request.set_gpulet_id(on_standby_ ? StandbyGpuletId(gpulet_id())
                                    : gpulet_id());
  request.set_model(config.name());
  // All shape-only: so is the batch. Mixed: zeros stand in for the data of
  // the shape-only calls.
  bool shape_only = true;
  for (const auto& c : calls) shape_only = shape_only && c->decoded.shape_only;
  request.set_shape_only(shape_only);
  for (int i = 0; i < config.input_size(); ++i) {
    const TensorConfig& tc = config.input(i);
    Tensor* t = request.add_inputs();
    t->set_name(tc.name());
    t->set_data_type(tc.data_type());
    t->add_shape(items);
    for (int d = 1; d < tc.dims_size(); ++d) t->add_shape(tc.dims(d));
    if (shape_only) continue;
    size_t item_bytes = DataTypeSize(tc.data_type());
    for (int d = 1; d < tc.dims_size(); ++d) item_bytes *= tc.dims(d);
    std::string* data = t->mutable_data();
    data->reserve(item_bytes * items);
    for (const auto& c : calls) {
      if (c->decoded.shape_only) {
        data->append(item_bytes * c->decoded.items, '\0');
      } else {
        data->append(c->decoded.inputs[i].data(), c->decoded.inputs[i].size());
      }
    }
  }
  return request;
}

void GpuletWorker::SendBatch(const FormedBatch& batch,
                             std::vector<std::unique_ptr<InferCall>> calls) {
  const ModelConfig& config = *model_configs_[batch.model];
  if (!calls.empty() && calls.front()->metrics != nullptr) {
    calls.front()->metrics->RecordBatch(config.name(), batch.items);
  }
  std::vector<const InferCall*> members;
  for (const auto& c : calls) members.push_back(c.get());
  BatchRequest request = MakeRequest(config, batch.items, members);
  const absl::Time sent = clock_->Now();
  absl::Time deadline = absl::InfiniteFuture();
  for (const DispatchRequest& r : batch.requests) {
    deadline = std::min(deadline, r.deadline);
  }
  if (deadline != absl::InfiniteFuture()) {
    // At least a microsecond: 0 would mean "the model's SLO".
    request.set_deadline_budget_ms(
        std::max(1e-3, absl::ToDoubleMilliseconds(deadline - sent)));
  }
  const uint64_t batch_id = batch.batch_id;
  // The callback owns the calls; std::function needs a copyable callable.
  auto shared_calls = std::make_shared<std::vector<std::unique_ptr<InferCall>>>(
      std::move(calls));
  CallbackStarts();
  backend_->Send(std::move(request),
                 [this, batch_id, sent, shared_calls](absl::Status status,
                                                      BatchResponse response) {
                   OnBatchResponse(batch_id, sent, std::move(*shared_calls),
                                   std::move(status), response);
                   CallbackEnds();
                 });
}

void GpuletWorker::CallbackStarts() {
  absl::MutexLock lock(&mu_);
  ++callbacks_running_;
}

void GpuletWorker::CallbackEnds() {
  absl::MutexLock lock(&mu_);
  --callbacks_running_;
}

void GpuletWorker::OnBatchResponse(
    uint64_t batch_id, absl::Time sent,
    std::vector<std::unique_ptr<InferCall>> calls, absl::Status status,
    const BatchResponse& response) {
  const absl::Time received = clock_->Now();
  // Time queued behind earlier batches on the device is not overhead.
  const absl::Duration round_trip =
      received - sent - absl::Microseconds(response.queue_time_us());
  Actions actions;
  {
    absl::MutexLock lock(&mu_);
    dispatcher_.OnBatchDone(batch_id,
                            absl::Microseconds(response.exec_time_us()),
                            round_trip, status.ok());
    if (!stopping_) actions = PollLocked();
  }
  // Give the device its next batch first (sent from this stream reader
  // thread: no hop to the timer thread), then answer the finished calls.
  Execute(std::move(actions));
  if (!status.ok() && response.gpulet_stopped() && options_.retry) {
    for (auto& call : calls) options_.retry(std::move(call));
    return;
  }
  if (!status.ok() && calls.size() > 1 &&
      (absl::IsInternal(status) || absl::IsInvalidArgument(status))) {
    Isolate(std::move(calls));
    return;
  }
  if (status.ok() && !calls.empty() && calls.front()->metrics != nullptr) {
    calls.front()->metrics->RecordExecution(
        calls.front()->config->name(), calls.front()->version,
        response.outputs_size() > 0 ? response.outputs(0).shape(0) : 0,
        absl::Microseconds(response.exec_time_us()));
  }
  int row = 0;
  for (auto& call : calls) {
    const int items = call->decoded.items;
    Answer(std::move(call), status, response, row, sent, received);
    row += items;
  }
}

void GpuletWorker::Answer(std::unique_ptr<InferCall> call, absl::Status status,
                          const BatchResponse& response, int row,
                          absl::Time sent, absl::Time received) {
  absl::Status s = status;
  if (s.ok()) {
    s = RequestCodec::EncodeOutputs(response, row, call->decoded.items,
                                    call->decoded, *call->config,
                                    call->response);
  }
  if (s.ok()) {
    // Where the time went, for clients and benchmarks (KServe response
    // parameters are the protocol's extension point).
    auto& params = *call->response->mutable_parameters();
    params["tessera.batch_size"].set_int64_param(
        response.outputs_size() > 0 ? response.outputs(0).shape(0) : 0);
    params["tessera.frontend_queue_us"].set_int64_param(
        absl::ToInt64Microseconds(sent - call->arrival));
    params["tessera.backend_round_trip_us"].set_int64_param(
        absl::ToInt64Microseconds(received - sent));
    params["tessera.backend_us"].set_int64_param(response.backend_time_us());
    params["tessera.device_queue_us"].set_int64_param(response.queue_time_us());
    params["tessera.exec_us"].set_int64_param(response.exec_time_us());
    params["tessera.proxy_us"].set_int64_param(response.proxy_time_us());
    params["tessera.frontend_us"].set_int64_param(
        absl::ToInt64Microseconds(clock_->Now() - call->arrival));
    call->queued =
        (sent - call->arrival) + absl::Microseconds(response.queue_time_us());
    call->executed = absl::Microseconds(response.exec_time_us());
  }
  ++answered_;
  if (!s.ok() || clock_->Now() > call->deadline) ++late_;
  FinishCall(std::move(call), s);
}

void GpuletWorker::Isolate(std::vector<std::unique_ptr<InferCall>> calls) {
  struct Pending {
    absl::Mutex mu;
    int left ABSL_GUARDED_BY(mu) = 0;
    std::vector<std::unique_ptr<InferCall>> calls ABSL_GUARDED_BY(mu);
    std::vector<absl::Status> status ABSL_GUARDED_BY(mu);
    std::vector<BatchResponse> responses ABSL_GUARDED_BY(mu);
    std::vector<absl::Time> sent ABSL_GUARDED_BY(mu), received
        ABSL_GUARDED_BY(mu);
  };
  auto pending = std::make_shared<Pending>();
  const size_t n = calls.size();
  std::vector<BatchRequest> requests;
  for (const auto& call : calls) {
    requests.push_back(
        MakeRequest(*call->config, call->decoded.items, {call.get()}));
  }
  {
    absl::MutexLock lock(&pending->mu);
    pending->left = static_cast<int>(n);
    pending->calls = std::move(calls);
    pending->status.resize(n);
    pending->responses.resize(n);
    pending->sent.assign(n, clock_->Now());
    pending->received.resize(n);
  }
  for (size_t i = 0; i < n; ++i) {
    CallbackStarts();
    backend_->Send(std::move(requests[i]), [this, pending, i](
                                               absl::Status status,
                                               BatchResponse response) {
      // Declared first, so it runs last: the callback's end on every path.
      struct EndOnExit {
        GpuletWorker* worker;
        ~EndOnExit() { worker->CallbackEnds(); }
      } end_on_exit{this};
      std::vector<std::unique_ptr<InferCall>> calls;
      std::vector<absl::Status> statuses;
      std::vector<BatchResponse> responses;
      std::vector<absl::Time> sent, received;
      {
        absl::MutexLock lock(&pending->mu);
        pending->status[i] = std::move(status);
        pending->responses[i] = std::move(response);
        pending->received[i] = clock_->Now();
        if (--pending->left > 0) return;
        calls = std::move(pending->calls);
        statuses = std::move(pending->status);
        responses = std::move(pending->responses);
        sent = std::move(pending->sent);
        received = std::move(pending->received);
      }
      bool any_ok = false;
      for (const absl::Status& s : statuses) any_ok = any_ok || s.ok();
      for (size_t k = 0; k < calls.size(); ++k) {
        absl::Status s = statuses[k];
        if (!s.ok() && any_ok &&
            (absl::IsInternal(s) || absl::IsInvalidArgument(s))) {
          s = absl::InvalidArgumentError(absl::StrCat(
              "the model failed on this request's inputs (the rest of its "
              "batch succeeded): ",
              s.message()));
        }
        Answer(std::move(calls[k]), s, responses[k], 0, sent[k], received[k]);
      }
    });
  }
}

bool GpuletWorker::SwitchToStandby() {
  if (options_.gpulet.standby_share_percent() <= 0) return false;
  return !on_standby_.exchange(true);
}

GpuletWorker::Window GpuletWorker::TakeWindow(int64_t min_answered) {
  if (answered_.load() < min_answered) return {};
  return {answered_.exchange(0), late_.exchange(0)};
}

void GpuletWorker::Stop() {
  for (auto& call : StopDispatching()) {
    FinishCall(std::move(call),
               absl::UnavailableError(absl::StrCat(
                   "gpulet '", gpulet_id(), "' stopped before serving")));
  }
}

size_t GpuletWorker::queued() const {
  absl::MutexLock lock(&mu_);
  return dispatcher_.queued();
}

absl::Duration GpuletWorker::QueueWait(const std::string& model) const {
  auto it = model_index_.find(model);
  if (it == model_index_.end()) return absl::ZeroDuration();
  absl::MutexLock lock(&mu_);
  return dispatcher_.QueueWait(it->second, clock_->Now());
}

bool GpuletWorker::WaitIdle(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return dispatcher_.inflight() == 0 && callbacks_running_ == 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
}

}  // namespace tessera
