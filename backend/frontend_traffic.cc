#include "backend/frontend_traffic.h"

#include <algorithm>

namespace tessera {

bool FrontendTraffic::AwaitQuiet(absl::Duration quiet, absl::Duration silence,
                                 absl::Time deadline) {
  draining_.store(true);
  const absl::Time since = clock_->Now();
  while (clock_->Now() < deadline) {
    const absl::Time now = clock_->Now();
    const absl::Time last = std::max(
        since, absl::FromUnixMicros(
                   last_batch_unix_us_.load(std::memory_order_relaxed)));
    const bool silent =
        now - absl::FromUnixMicros(last_heartbeat_unix_us_.load()) >= silence;
    if (now - last >= quiet && (unrouted_.load() || silent)) return true;
    absl::SleepFor(std::min(absl::Milliseconds(50), quiet / 4));
  }
  return false;
}

}  // namespace tessera
