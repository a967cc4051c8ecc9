#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "batching/latency_estimator.h"
#include "common/clock.h"
#include "model_config.pb.h"
#include "plan.pb.h"

namespace tessera {

// A request waiting to be batched. The payload stays with the caller; the
// dispatcher only sees what it needs to decide.
struct DispatchRequest {
  uint64_t id = 0;
  int model = 0;  // index into the dispatcher's models
  int items = 1;  // leading (batch) dimension the request carries
  absl::Time arrival;
  absl::Time deadline;
};

// A batch the dispatcher decided to send now.
struct FormedBatch {
  uint64_t batch_id = 0;
  int model = 0;
  int items = 0;
  std::vector<DispatchRequest> requests;
  absl::Duration predicted_exec;
};

// Forms batches for one gpulet from per-model queues. The same class runs in
// the frontend (driven by a thread and the real clock) and in the simulator
// (driven by simulated time), so both dispatch identically.
//
// Batching rule. The model's batch size in the plan is a cap. A batch of
// model m leaves when
//   (a) it is full (its queue holds at least the cap),
//   (b) waiting longer would make its oldest request miss its deadline:
//       now >= deadline - overhead - L(items),
//   (c) its duty cycle (time-shared gpulets) has passed since the model's
//       previous batch left,
//   (e) its oldest request has waited the model's max_queue_delay (a
//       configured bound, Triton's dynamic_batching delay; none by default),
//       or
//   (d) (work-conserving mode) the gpulet is about to go idle: nothing in
//       flight, or the in-flight work ends within one overhead;
// and it takes the largest prefix of the queue (in deadline order, up to the
// cap) whose predicted completion still meets the oldest request's
// deadline. When several models are ready, the one whose oldest request's
// deadline is earliest goes first (EDF). A request that cannot meet its
// deadline even if it were sent next, alone, is expired: returned to the
// caller for an early DEADLINE_EXCEEDED, never silently dropped.
//
// Backlog. Serving the oldest requests first makes an overloaded gpulet
// send small batches (a full one would miss the oldest deadline), which
// lowers its throughput just when it is needed most: at 3x its capacity,
// goodput fell to 40 % of capacity. With `shed_oldest_in_backlog`, while a
// queue holds more than a full batch beyond its oldest request and a full
// batch sent now would miss that request's deadline, the oldest request is
// expired instead, so the gpulet keeps sending full batches that meet
// their deadlines.
//
// Stale estimates. Only completed batches refresh the estimates, so an
// estimate inflated for a while (the frontend starved of CPU inflates the
// learned overhead) would expire every later request and never be
// corrected. With `probe_interval` set, a model none of whose requests was
// sent for max(probe_interval, 10 L(1)) sends its most promising request
// that would expire (one whose deadline has not passed) alone instead: at
// most one late batch per interval (<= 10% of the device), and a measured
// batch that corrects the estimate.
//
// Queue wait. What a new request of a model would wait behind: the longer
// of its queue's head's wait now and the last departure's, less the time
// since that departure. A batch departs with its oldest request's wait; an
// expiry departs with the expired request's whole budget (deadline minus
// arrival: the queue could not serve it at all), so after an expiry the
// signal stays high for that budget less the time since. With no
// departures (nothing admitted) it decays to the head's wait.
//
// Predicted completion of a batch sent at `now` is
//   max(now + overhead, busy_until) + L(items) * (1 + exec_margin_fraction)
// where `overhead` is the measured round trip minus execution (network and
// queueing outside the device), learned per completed batch, and
// `busy_until` the predicted completion of the last batch in flight.
//
// Not thread-safe: the owner serialises calls.
class Dispatcher {
 public:
  struct ModelSlot {
    std::string name;
    int batch_cap = 1;
    // Round length of a time-shared gpulet (ZeroDuration: none). The
    // model's batch leaves at the latest one duty cycle after its previous
    // batch left, full or not.
    absl::Duration duty_cycle = absl::ZeroDuration();
    // Rule (e): the batch leaves once its oldest request has waited this
    // long (InfiniteDuration: no such bound).
    absl::Duration max_queue_delay = absl::InfiniteDuration();

    // The slot of a plan's assignment: its batch size (at least 1) and
    // duty cycle, and `config`'s max_queue_delay_ms when it sets one
    // (`config` may be null). The frontend's workers and the simulator
    // both build their dispatchers this way.
    static ModelSlot For(const ModelAssignment& assignment,
                         const ModelConfig* config);
  };
  struct Options {
    // Batches in flight at once; >1 hides the network hop.
    int max_inflight_batches = 2;
    // Round-trip overhead assumed before any batch has completed.
    absl::Duration initial_overhead = absl::Milliseconds(1);
    double overhead_ewma_weight = 0.2;
    // Safety margin on predicted execution times.
    double exec_margin_fraction = 0.1;
    // Send as soon as the gpulet would otherwise idle (rule (d)).
    bool work_conserving = true;
    // Operator-group gpulets (Abacus): every request leaves at once as a
    // batch of its own, none is expired here and batches in flight are not
    // capped; the backend's controller orders, groups and drops.
    bool pass_through = false;
    // See "Stale estimates" above (ZeroDuration: never probe).
    absl::Duration probe_interval = absl::ZeroDuration();
    // See "Backlog" above.
    bool shed_oldest_in_backlog = false;
  };

  struct Decision {
    std::vector<FormedBatch> batches;
    std::vector<DispatchRequest> expired;
    // When Poll() should run again if nothing else happens first
    // (InfiniteFuture: only on Enqueue/OnBatchDone).
    absl::Time wake_at = absl::InfiniteFuture();
  };

  // `estimator` and `clock` must outlive the dispatcher.
  Dispatcher(std::vector<ModelSlot> models, LatencyEstimator* estimator,
             const Clock* clock, Options options);

  void Enqueue(const DispatchRequest& request);
  // Decides what to send or expire now.
  Decision Poll();
  // A batch finished. `exec` is the device's measured execution time,
  // `round_trip` the time from send to response minus any time the batch
  // waited on the device for earlier batches (that wait is what
  // `busy_until` models; counting it as overhead would inflate every later
  // prediction). Failed batches (ok=false) update no estimate.
  void OnBatchDone(uint64_t batch_id, absl::Duration exec,
                   absl::Duration round_trip, bool ok);
  // Removes and returns every queued request (e.g. at shutdown).
  std::vector<DispatchRequest> TakeAll();

  const std::vector<ModelSlot>& models() const { return models_; }
  int inflight() const { return static_cast<int>(inflight_.size()); }
  size_t queued() const;
  // How long a request of `model` enqueued at `now` finds the requests
  // ahead of it waiting (admission control's signal, see "Queue wait"
  // above).
  absl::Duration QueueWait(int model, absl::Time now) const;
  absl::Duration overhead() const { return overhead_; }

 private:
  struct Inflight {
    int model;
    int items;
    absl::Time sent;
    absl::Duration predicted_exec;
  };

  absl::Duration Exec(int model, int items) const;
  // Records a departure from `model`'s queue (see "Queue wait").
  void Depart(int model, absl::Time now, absl::Duration wait);
  absl::Time Completion(absl::Time now, int model, int items) const;
  void RecomputeBusyUntil(absl::Time now);
  // Expires requests that cannot meet their deadline (into `expired`),
  // keeping one probe per stale model (see "Stale estimates").
  void Expire(absl::Time now, std::vector<DispatchRequest>* expired);
  // See "Backlog".
  void ShedOldest(absl::Time now, int m, std::vector<DispatchRequest>* expired);

  std::vector<ModelSlot> models_;
  LatencyEstimator* estimator_;
  const Clock* clock_;
  Options options_;
  std::vector<std::deque<DispatchRequest>> queues_;  // ordered by deadline
  // When each model's previous batch left (InfinitePast: never).
  std::vector<absl::Time> last_sent_;
  // When each model last sent a batch or was probed (construction time at
  // first), for `probe_interval`.
  std::vector<absl::Time> last_probe_;
  // Each model's last departure (see "Queue wait"): when, and the wait it
  // counted.
  std::vector<absl::Time> last_departure_;
  std::vector<absl::Duration> last_departure_wait_;
  std::map<uint64_t, Inflight> inflight_;
  absl::Time busy_until_ = absl::InfinitePast();
  absl::Duration overhead_;
  uint64_t next_batch_id_ = 1;
};

}  // namespace tessera
