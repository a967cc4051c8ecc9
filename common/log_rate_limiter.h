#pragma once

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace tessera {

// Lets at most `per_period` events of one kind be logged per period, so
// that a flood (a client retrying bad credentials in a loop) cannot flood
// the log, and says how many were left out. Thread-safe.
class LogRateLimiter {
 public:
  // `clock` (default: the real one) must outlive this.
  explicit LogRateLimiter(int per_period,
                          absl::Duration period = absl::Seconds(1),
                          const Clock* clock = RealClock::Get())
      : per_period_(per_period), period_(period), clock_(clock) {}

  // True if this event may be logged; then `*suppressed` is the number of
  // events not logged since the last one that was.
  bool Allow(int64_t* suppressed) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const int per_period_;
  const absl::Duration period_;
  const Clock* const clock_;
  absl::Mutex mu_;
  absl::Time period_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int logged_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera
