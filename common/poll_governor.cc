#include "common/poll_governor.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tessera {

absl::StatusOr<PollOptions> MakePollOptions(int64_t window_us,
                                            double idle_percent,
                                            absl::string_view flag_prefix) {
  if (window_us < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag_prefix, "poll_us must be at least 0, not ", window_us));
  }
  if (!(idle_percent >= 0 && idle_percent <= 100)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--poll_idle_percent must be in [0, 100], not ", idle_percent));
  }
  PollOptions options;
  options.window = absl::Microseconds(window_us);
  options.idle_budget = idle_percent / 100;
  return options;
}

absl::Duration PollGovernor::StartWait(absl::Time now) {
  granted_ = absl::ZeroDuration();
  if (options_.window <= absl::ZeroDuration()) return granted_;
  if (now - period_start_ >= options_.period) {
    period_start_ = now;
    idle_polled_ = absl::ZeroDuration();
  }
  if (last_gap_ > options_.window) return granted_;
  const absl::Duration left =
      options_.period * options_.idle_budget - idle_polled_;
  if (left <= absl::ZeroDuration()) return granted_;
  granted_ = std::min(options_.window, left);
  return granted_;
}

void PollGovernor::EndWait(absl::Duration waited) {
  last_gap_ = waited;
  // A wait that lasted its whole poll found nothing by polling.
  if (granted_ > absl::ZeroDuration() && waited >= granted_) {
    idle_polled_ += granted_;
  }
  granted_ = absl::ZeroDuration();
}

}  // namespace tessera
