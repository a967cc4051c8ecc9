#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/backlog_bound.h"
#include "frontend/transport_wait.h"

namespace tessera {

// The frontend's admission budget: how many ModelInfer calls, and how many
// of their request bytes, may be held at once (from acceptance until the
// answer), in all and per model. A call beyond any limit is refused at once
// with RESOURCE_EXHAUSTED (MEASURES.md: "queue or byte budget full"), before
// it is decoded, so overload cannot grow the frontend's memory or turn into
// silent deadlines. A limit of 0 is no limit.
//
// It also refuses calls that waited in gRPC, before their handler, for a
// share of their SLO: their estimated wait (TransportWait, from the
// deadline gRPC stamped when the call arrived) and the upper bound of any
// wait (BacklogBound: how long the event loops have been busy without a
// break) must both reach it. Refusing such a call at once costs the
// frontend less than serving it late, and keeps the calls behind it from
// waiting as long (docs/live-serving.md, "Overload"). Thread-safe.
class AdmissionControl {
 public:
  // The defaults are the frontend's (tessera_frontend --help).
  struct Options {
    int64_t max_requests = 16384;
    // Request bytes (the serialized ModelInfer message, as received) plus
    // `per_request_overhead_bytes` each: what a held call costs in memory.
    int64_t max_bytes = int64_t{1} << 30;
    int64_t max_requests_per_model = 4096;
    int64_t per_request_overhead_bytes = 4096;
    // Refuse a call whose wait in gRPC reaches this share of its model's
    // SLO; 0: never.
    double max_backlog_slo_fraction = 0.5;
    // Refuse a call while the calls of its model queued ahead of it have
    // waited this share of the model's SLO (the frontend takes calls
    // faster than its gpulets send them); 0: never.
    double max_queue_slo_fraction = 0;
  };

  // What an admitted call holds; given back when destroyed (or reset).
  // Movable, not copyable.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept { *this = std::move(other); }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket() { Reset(); }
    // Gives the budget back now.
    void Reset();
    bool held() const { return owner_ != nullptr; }

   private:
    friend class AdmissionControl;
    Ticket(AdmissionControl* owner, std::string model, int64_t bytes)
        : owner_(owner), model_(std::move(model)), bytes_(bytes) {}
    AdmissionControl* owner_ = nullptr;
    std::string model_;
    int64_t bytes_ = 0;
  };

  // `backlog` (may be null: no backlog check) must outlive this.
  explicit AdmissionControl(Options options,
                            const BacklogBound* backlog = nullptr)
      : options_(options), backlog_(backlog) {}

  // RESOURCE_EXHAUSTED when a call of a model with SLO `slo` waited in
  // gRPC for `max_backlog_slo_fraction` of it or more. `client_model`
  // names the client (its peer address) and the model; `deadline` is the
  // call's as gRPC stamped it (InfiniteFuture: none), `now` the handler's
  // time.
  absl::Status CheckBacklog(absl::Duration slo, absl::string_view client_model,
                            absl::Time deadline, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

  // RESOURCE_EXHAUSTED when the calls queued ahead of a call of a model
  // with SLO `slo` have waited `queue_wait`, `max_queue_slo_fraction` of
  // the SLO or more.
  absl::Status CheckQueue(absl::Duration slo, absl::Duration queue_wait)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Admits one call of `model` whose request holds `request_bytes`, or
  // says which limit refuses it (RESOURCE_EXHAUSTED).
  absl::StatusOr<Ticket> Admit(absl::string_view model, int64_t request_bytes)
      ABSL_LOCKS_EXCLUDED(mu_);

  struct Usage {
    int64_t requests = 0;
    int64_t bytes = 0;
    // Models with calls held.
    std::map<std::string, int64_t> requests_per_model;
    int64_t refused = 0;              // since start, by every rule
    int64_t refused_for_backlog = 0;  // of those, by CheckBacklog
    int64_t refused_for_queue = 0;    // of those, by CheckQueue
  };
  Usage usage() const ABSL_LOCKS_EXCLUDED(mu_);
  const Options& options() const { return options_; }

 private:
  void Release(const std::string& model, int64_t bytes)
      ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  const BacklogBound* const backlog_;
  TransportWait waits_;
  mutable absl::Mutex mu_;
  int64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t, std::less<>> per_model_ ABSL_GUARDED_BY(mu_);
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refused_for_backlog_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refused_for_queue_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera
