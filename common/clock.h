#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tessera {

// Source of time. Injected into every component that reads the clock, so
// tests and the simulator control time.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

// Wall-clock time. Thread-safe.
class RealClock : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  // Process-wide instance; never destroyed.
  static RealClock* Get();
};

// Manually advanced clock for tests and simulation. Thread-safe.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::UnixEpoch()) : now_(start) {}
  absl::Time Now() const override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  void Set(absl::Time t) {
    absl::MutexLock lock(&mu_);
    now_ = t;
  }

 private:
  mutable absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
