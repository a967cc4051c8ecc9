#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "common/clock.h"

namespace tessera {

// What a backend knows of its frontend's traffic during a graceful
// shutdown: whether it is draining (Health says so, and the frontend plans
// without it) and when the last batch arrived. Lock-free, since the serving
// path records every batch. Thread-safe.
class FrontendTraffic {
 public:
  // `clock` must outlive this object.
  explicit FrontendTraffic(const Clock* clock) : clock_(clock) {}

  // A batch arrived now.
  void RecordBatch() {
    last_batch_unix_us_.store(absl::ToUnixMicros(clock_->Now()),
                              std::memory_order_relaxed);
  }
  bool draining() const { return draining_.load(); }
  // Marks the backend draining, then returns once no batch has arrived for
  // `quiet` (true: the frontend moved away) or at `deadline` (false).
  bool AwaitQuiet(absl::Duration quiet, absl::Time deadline);

 private:
  const Clock* const clock_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> last_batch_unix_us_{0};
};

}  // namespace tessera
