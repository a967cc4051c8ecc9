#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "batching/dispatcher.h"
#include "batching/latency_estimator.h"
#include "common/clock.h"
#include "frontend/backend_control.h"
#include "frontend/infer_call.h"
#include "plan.pb.h"

namespace tessera {

// Serves one gpulet of the plan from the frontend: queues the calls routed
// to it, lets the Dispatcher form batches, sends them on the backend's
// stream, and splits each batch's outputs back into the calls' responses.
// Every accepted call is finished exactly once: with outputs, with the
// backend's error, with DEADLINE_EXCEEDED when it expires in the queue, or
// with UNAVAILABLE at Stop(). Thread-safe.
class GpuletWorker {
 public:
  struct Options {
    std::string backend_id;
    std::string device_id;
    GpuletPlan gpulet;
    int64_t epoch = 0;
    // Configs of the gpulet's models (must outlive the worker).
    std::map<std::string, const ModelConfig*> configs;
    // Models its proxy could not load (their calls still reach it and get
    // its UNAVAILABLE with the reason; ModelReady says false).
    std::set<std::string> failed_models;
    Dispatcher::Options dispatch;
    // Takes the calls of a batch the backend refused because it stopped
    // the gpulet for a stop-then-start swap (BatchResponse.gpulet_stopped),
    // to route them again; unset: they fail with the backend's status.
    std::function<void(std::unique_ptr<InferCall>)> retry;
  };

  // `backend` and `clock` must outlive the worker. `estimator` is seeded
  // by the caller (profiles, warm-up latencies).
  GpuletWorker(Options options, BatchSink* backend, const Clock* clock,
               LatencyEstimator estimator);
  ~GpuletWorker();

  // Queues `call` (its model must be on this gpulet).
  void Submit(std::unique_ptr<InferCall> call) ABSL_LOCKS_EXCLUDED(mu_);
  // Stops dispatching and finishes queued calls with UNAVAILABLE. Batches in
  // flight still complete through the backend client's callbacks, so the
  // worker must outlive them: see WaitIdle() and BackendClient::Shutdown().
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  using Forward = std::function<void(std::unique_ptr<InferCall>)>;
  // Like Stop(), but for a plan change: returns the queued calls instead of
  // failing them, and hands calls that still arrive (routed here before the
  // switch) to `forward`. Batches in flight complete as usual.
  std::vector<std::unique_ptr<InferCall>> Retire(Forward forward)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Waits up to `timeout` until no batch is in flight and every backend
  // callback has returned (after that the worker may be destroyed).
  bool WaitIdle(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);

  const Options& options() const { return options_; }
  // Calls waiting in the dispatcher.
  size_t queued() const ABSL_LOCKS_EXCLUDED(mu_);
  // Dispatcher::QueueWait of `model` now (zero for a model it does not
  // serve).
  absl::Duration QueueWait(const std::string& model) const
      ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& gpulet_id() const { return options_.gpulet.gpulet_id(); }

  // iGniter's shadow: from now on batches go to the warm standby proxy
  // ("<gpulet_id>/standby"). False if the gpulet has none or already uses
  // it.
  bool SwitchToStandby();
  bool on_standby() const { return on_standby_; }
  // Calls answered since the window was last taken, and how many of them
  // missed their deadline (late, or rejected early because they could not
  // meet it). The window is taken (and restarts) only once it holds at
  // least `min_answered` calls; before that, {0, 0}.
  struct Window {
    int64_t answered = 0;
    int64_t late = 0;
  };
  Window TakeWindow(int64_t min_answered);

 private:
  // What a dispatcher poll decided, carried out after the lock is released.
  struct Actions {
    std::vector<std::pair<FormedBatch, std::vector<std::unique_ptr<InferCall>>>>
        batches;
    std::vector<std::unique_ptr<InferCall>> expired;
  };

  // Stops the timer thread and dispatching; returns the queued calls
  // (none if already stopped).
  std::vector<std::unique_ptr<InferCall>> StopDispatching()
      ABSL_LOCKS_EXCLUDED(mu_);
  // Timer thread: polls when the dispatcher's next deadline comes. Polls
  // triggered by events (a new call, a completed batch) run inline on the
  // thread of the event, which saves a thread hop on the serving path.
  void Loop();
  Actions PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Execute(Actions actions) ABSL_LOCKS_EXCLUDED(mu_);
  void SendBatch(const FormedBatch& batch,
                 std::vector<std::unique_ptr<InferCall>> calls);
  // The batch of `calls` (`items` rows in all) for the backend.
  BatchRequest MakeRequest(const ModelConfig& config, int items,
                           const std::vector<const InferCall*>& calls) const;
  // A batch of several calls failed inside the model: each call is sent
  // again alone (straight to the backend, outside the dispatcher's
  // in-flight count: a rare path), so that one bad request fails by
  // itself. A call that fails alone while another succeeds is answered
  // INVALID_ARGUMENT (its inputs are at fault); if every one fails, each
  // gets its own error.
  void Isolate(std::vector<std::unique_ptr<InferCall>> calls);
  // Counts a backend callback in (before its Send) and out (its last use
  // of the worker).
  void CallbackStarts() ABSL_LOCKS_EXCLUDED(mu_);
  void CallbackEnds() ABSL_LOCKS_EXCLUDED(mu_);
  // Answers `call` from row `row` of `response` (or with `status`).
  void Answer(std::unique_ptr<InferCall> call, absl::Status status,
              const BatchResponse& response, int row, absl::Time sent,
              absl::Time received);
  void OnBatchResponse(uint64_t batch_id, absl::Time sent,
                       std::vector<std::unique_ptr<InferCall>> calls,
                       absl::Status status, const BatchResponse& response)
      ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  BatchSink* backend_;
  const Clock* clock_;
  std::map<std::string, int> model_index_;
  std::vector<const ModelConfig*> model_configs_;  // by dispatcher index

  mutable absl::Mutex mu_;
  LatencyEstimator estimator_ ABSL_GUARDED_BY(mu_);
  Dispatcher dispatcher_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::unique_ptr<InferCall>> calls_ ABSL_GUARDED_BY(mu_);
  uint64_t next_call_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Set to make the timer thread re-poll (and re-arm).
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  // When the last poll wants to run again, and when the timer thread is
  // currently set to wake (InfiniteFuture while it is not waiting).
  absl::Time next_wake_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::Time armed_wake_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Forward forward_ ABSL_GUARDED_BY(mu_);
  // Backend callbacks (batches and Isolate's single sends) that have not
  // returned yet: they run on the worker, so WaitIdle waits for them too.
  // A batch leaves the dispatcher's in-flight count before its calls are
  // answered, and Isolate's sends are never in it.
  int callbacks_running_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> on_standby_{false};
  std::atomic<int64_t> answered_{0};
  std::atomic<int64_t> late_{0};
  std::thread thread_;
};

// Finishes `call` with `status` (and its response filled on OK).
void FinishCall(std::unique_ptr<InferCall> call, const absl::Status& status);

}  // namespace tessera
