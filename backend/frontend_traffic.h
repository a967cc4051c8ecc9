#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "common/clock.h"

namespace tessera {

// What a backend knows of its frontend's traffic during a graceful
// shutdown: whether it is draining (Health says so, and the frontend plans
// without it), when the last batch arrived, and what the frontend's last
// heartbeat said of its routing. Lock-free, since the serving path records
// every batch. Thread-safe.
class FrontendTraffic {
 public:
  // `clock` must outlive this object.
  explicit FrontendTraffic(const Clock* clock) : clock_(clock) {}

  // A batch arrived now.
  void RecordBatch() {
    last_batch_unix_us_.store(absl::ToUnixMicros(clock_->Now()),
                              std::memory_order_relaxed);
  }
  // A frontend heartbeat came now; `unrouted`: the frontend's settled plan
  // sends no batch here.
  void RecordHeartbeat(bool unrouted) {
    unrouted_.store(unrouted);
    last_heartbeat_unix_us_.store(absl::ToUnixMicros(clock_->Now()));
  }
  bool draining() const { return draining_.load(); }
  // Marks the backend draining, then returns true once the frontend has
  // moved away: its latest heartbeat said it routes nothing here (or none
  // came for `silence`: no frontend watches this backend) and no batch
  // has arrived for `quiet`. Returns false at `deadline`.
  bool AwaitQuiet(absl::Duration quiet, absl::Duration silence,
                  absl::Time deadline);

 private:
  const Clock* const clock_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> last_batch_unix_us_{0};
  std::atomic<bool> unrouted_{false};
  std::atomic<int64_t> last_heartbeat_unix_us_{0};
};

}  // namespace tessera
