#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "common/clock.h"

namespace tessera {

// An upper bound on how long a call now reaching an event loop's handler
// has waited inside gRPC before it: the time since the event loops last
// found their completion queues empty.
//
// gRPC stamps no arrival time on a server call, so when the loops that
// run the handlers are saturated, calls queue in the transport unseen and
// reach their handler already late. At the moment a loop finds its queue
// empty (and every other moment it sleeps), no call of the armed methods
// waits: one would have been matched to the loop's armed request. Every
// call waiting now therefore arrived after the last such moment. The
// bound is loose near saturation (a long busy period with a short queue)
// and exact for a queue that has grown since the loops last rested, the
// case it exists for (docs/live-serving.md, "Overload").
//
// Any number of loops may mark; the latest mark counts (an idle loop
// with an armed request leaves no call unmatched). Thread-safe.
class BacklogBound {
 public:
  // `clock` must outlive this; the bound starts at zero.
  explicit BacklogBound(const Clock* clock);

  // A loop found its queue empty (or has just woken from a wait on it).
  void MarkEmpty();

  // How long since the last MarkEmpty (zero if a later mark raced ahead).
  absl::Duration Bound() const;

 private:
  const Clock* const clock_;
  // absl::ToUnixNanos of the latest mark.
  std::atomic<int64_t> last_empty_ns_;
};

}  // namespace tessera
