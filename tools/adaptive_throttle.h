#pragma once

#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessera {

// Client-side adaptive throttling ("Handling Overload", Site Reliability
// Engineering, ch. 21): a client that sees the server refuse sheds part of
// its own requests before sending them, so a refusal costs the server
// nothing. Over the last `window` it counts requests and the ones the
// server accepted, and refuses a new one locally with probability
//   max(0, (requests - k * accepts) / (requests + 1)).
// While the server accepts everything no request is refused; under
// overload the server sees about k times what it accepts. Smaller k sheds
// harder (the book suggests 2).
//
// One difference from the book: a request counts when it ends (answered,
// or refused here), in the window slot of its send, and a request still in
// flight counts only once its slot has closed, as refused until its answer
// comes. Counted at send, the requests of a run's first moments (no answer
// back yet) look refused, and since refused requests count too, that can
// keep refusing for a whole window with the server idle; never counted
// while in flight, a server that stalls would see no shedding until the
// clients' deadlines.
//
// Thread-safe; the caller passes the time and a uniform draw, so the
// decision is reproducible.
class AdaptiveThrottle {
 public:
  struct Options {
    double k = 2;
    absl::Duration window = absl::Seconds(10);
    // The window is kept as this many equal buckets.
    int buckets = 20;
  };

  // Codes by which a server refuses a request it has not run (MEASURES.md:
  // a full queue or budget, a model being restored, a deadline that can no
  // longer be met). Every other answer counts as accepted.
  static bool IsRefusal(absl::StatusCode code);

  // k must be >= 1, window > 0 and buckets >= 1 (checked: the caller
  // validates flags).
  explicit AdaptiveThrottle(const Options& options);

  // Says whether to send a request at `now`; `draw` is uniform in [0, 1).
  // A request refused here counts at once. The caller stamps the sent
  // request with the same `now`.
  bool Admit(absl::Time now, double draw);
  // The server's answer to a request sent at `sent`: counted as accepted
  // unless `code` IsRefusal (nothing is counted once its send has left
  // the window).
  void Answered(absl::Time sent, absl::StatusCode code);
  // The probability Admit refuses at `now`.
  double RefusalProbability(absl::Time now);

 private:
  // A ring of `buckets` slots; slot i % buckets holds bucket i while it is
  // in the window.
  struct Bucket {
    int64_t index = -1;     // floor((time - epoch) / bucket width)
    int64_t sent = 0;       // admitted
    int64_t answered = 0;   // of those
    int64_t accepts = 0;    // of those answered
    int64_t throttled = 0;  // refused by Admit
  };
  int64_t IndexOf(absl::Time t) const;
  // The bucket of `t`, reset if its slot held an older one; null when `t`
  // is older than the window that the newest bucket seen ends.
  Bucket* BucketOf(absl::Time t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double ProbabilityAt(int64_t now_index) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const double k_;
  const absl::Duration bucket_width_;
  const int buckets_;

  absl::Mutex mu_;
  std::vector<Bucket> ring_ ABSL_GUARDED_BY(mu_);
  int64_t newest_ ABSL_GUARDED_BY(mu_) = 0;  // the newest index seen
};

}  // namespace tessera
