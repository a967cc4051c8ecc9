#include "frontend/transport_wait.h"

#include <algorithm>

namespace tessera {

absl::Duration TransportWait::Observe(absl::string_view key,
                                      absl::Time deadline, absl::Time now) {
  const absl::Duration left = deadline - now;
  // No deadline (gRPC's is then the far future): nothing to learn.
  if (left >= absl::Hours(24 * 365)) return absl::ZeroDuration();
  absl::MutexLock lock(&mu_);
  Rotate(now);
  auto it = longest_.find(key);
  if (it == longest_.end()) {
    if (longest_.size() >= max_keys_) return absl::ZeroDuration();
    it = longest_.emplace(std::string(key), Longest()).first;
  }
  Longest& longest = it->second;
  longest.current = std::max(longest.current, left);
  return std::max(longest.current, longest.previous) - left;
}

void TransportWait::Rotate(absl::Time now) {
  if (now - window_start_ < window_) return;
  // More than two windows since the last call: nothing recent is left.
  const bool stale = now - window_start_ >= 2 * window_;
  window_start_ = now;
  for (auto it = longest_.begin(); it != longest_.end();) {
    Longest& l = it->second;
    l.previous = stale ? -absl::InfiniteDuration() : l.current;
    l.current = -absl::InfiniteDuration();
    if (l.previous == -absl::InfiniteDuration()) {
      longest_.erase(it++);
    } else {
      ++it;
    }
  }
}

}  // namespace tessera
