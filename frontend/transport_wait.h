#pragma once

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessera {

// Estimates how long a call waited inside gRPC before its handler ran,
// from its deadline. gRPC gives a server call no arrival time, but it
// stamps the call's deadline when it parses the call's headers: arrival
// plus the timeout the client sent. A client usually sends one timeout per
// model, so the longest time-to-deadline that a (client, model) pair
// showed recently -- a call that did not wait -- stands for that timeout,
// and a call's wait is that minus its own time-to-deadline.
//
// "Recently": within the current window and the one before (windows of
// `window`), so a client that shortens its timeout is believed within two
// windows. A pair first seen, or a call without a deadline, has waited
// zero as far as this knows. A client that mixes timeouts for one model
// makes its shorter-timeout calls look older than they are; BacklogBound,
// which bounds every wait from above, keeps that from refusing calls while
// the event loops keep up. Thread-safe.
class TransportWait {
 public:
  // At most `max_keys` pairs are tracked (a flood of client names cannot
  // grow memory); beyond, new pairs are not recorded until a window ends.
  explicit TransportWait(absl::Duration window = absl::Seconds(30),
                         size_t max_keys = 4096)
      : window_(window), max_keys_(max_keys) {}

  // Records a call of the pair `key` whose deadline is `deadline` (a year
  // or more away: none), handled at `now`, and returns its estimated wait.
  absl::Duration Observe(absl::string_view key, absl::Time deadline,
                         absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Longest {
    absl::Duration current = -absl::InfiniteDuration();
    absl::Duration previous = -absl::InfiniteDuration();
  };
  void Rotate(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration window_;
  const size_t max_keys_;
  absl::Mutex mu_;
  absl::Time window_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::flat_hash_map<std::string, Longest> longest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
