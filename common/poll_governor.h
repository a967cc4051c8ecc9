#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace tessera {

// The binaries' defaults: --poll_us (and the backend's --proxy_poll_us)
// and --poll_idle_percent (docs/benchmarks.md).
inline constexpr int64_t kDefaultPollWindowUs = 2000;
inline constexpr double kDefaultPollIdlePercent = 5;

// How a thread that waits for events (an event loop, a proxy) polls before
// it sleeps.
struct PollOptions {
  // The longest poll before one wait sleeps; 0: it never polls.
  absl::Duration window = absl::ZeroDuration();
  // The share of wall time, per `period`, that polls finding nothing may
  // take (the poll's cost when traffic is too sparse to pay for it);
  // once it is spent, waits sleep at once until the next period.
  double idle_budget = kDefaultPollIdlePercent / 100;
  absl::Duration period = absl::Seconds(1);
};

// Options from the binaries' --poll_us (or --<flag_prefix>poll_us, such as
// the backend's --proxy_poll_us) and --poll_idle_percent flags;
// INVALID_ARGUMENT naming the flag when one is out of range. An idle
// percent of 0 means no polling at all.
absl::StatusOr<PollOptions> MakePollOptions(int64_t window_us,
                                            double idle_percent,
                                            absl::string_view flag_prefix = "");

// Decides how long each wait of one thread polls: a pure function of the
// waits it is told about, with the time passed in (no clock, no lock).
//
// A wait polls for up to `window`, but only
//   - while events come within `window` of each other: after a longer gap
//     the next wait sleeps at once, since the traffic is too sparse for a
//     poll to catch anything (the first wait polls), and
//   - while this period's polls that found nothing (they ran their whole
//     length, then slept) took less than `idle_budget` of the period.
// Polls that find their event cost CPU that buys latency; only the others
// are counted.
class PollGovernor {
 public:
  explicit PollGovernor(const PollOptions& options) : options_(options) {}

  // How long the wait starting at `now` polls before it sleeps.
  absl::Duration StartWait(absl::Time now);
  // That wait's event came `waited` after it started.
  void EndWait(absl::Duration waited);

  // Polls that found nothing in the current period.
  absl::Duration idle_polled() const { return idle_polled_; }

 private:
  const PollOptions options_;
  absl::Duration granted_ = absl::ZeroDuration();  // of the current wait
  absl::Duration last_gap_ = absl::ZeroDuration();
  absl::Time period_start_ = absl::InfinitePast();
  absl::Duration idle_polled_ = absl::ZeroDuration();
};

}  // namespace tessera
