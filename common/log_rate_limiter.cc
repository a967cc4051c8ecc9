#include "common/log_rate_limiter.h"

namespace tessera {

bool LogRateLimiter::Allow(int64_t* suppressed) {
  const absl::Time now = clock_->Now();
  absl::MutexLock lock(&mu_);
  if (now - period_start_ >= period_) {
    period_start_ = now;
    logged_ = 0;
  }
  if (logged_ >= per_period_) {
    ++suppressed_;
    return false;
  }
  ++logged_;
  *suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

}  // namespace tessera
