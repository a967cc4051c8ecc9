#include "common/backlog_bound.h"

#include <algorithm>

namespace tessera {

BacklogBound::BacklogBound(const Clock* clock)
    : clock_(clock), last_empty_ns_(absl::ToUnixNanos(clock->Now())) {}

void BacklogBound::MarkEmpty() {
  const int64_t now = absl::ToUnixNanos(clock_->Now());
  int64_t seen = last_empty_ns_.load(std::memory_order_relaxed);
  // Marks from several loops may race: keep the latest.
  while (seen < now && !last_empty_ns_.compare_exchange_weak(
                           seen, now, std::memory_order_relaxed)) {
  }
}

absl::Duration BacklogBound::Bound() const {
  const int64_t now = absl::ToUnixNanos(clock_->Now());
  return absl::Nanoseconds(std::max<int64_t>(
      0, now - last_empty_ns_.load(std::memory_order_relaxed)));
}

}  // namespace tessera
