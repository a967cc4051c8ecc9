#include "tools/adaptive_throttle.h"

#include <algorithm>

#include "absl/base/internal/raw_logging.h"

namespace tessera {

bool AdaptiveThrottle::IsRefusal(absl::StatusCode code) {
  return code == absl::StatusCode::kResourceExhausted ||
         code == absl::StatusCode::kUnavailable ||
         code == absl::StatusCode::kDeadlineExceeded;
}

AdaptiveThrottle::AdaptiveThrottle(const Options& options)
    : k_(options.k),
      bucket_width_(options.window / std::max(1, options.buckets)),
      buckets_(std::max(1, options.buckets)),
      ring_(buckets_) {
  ABSL_RAW_CHECK(options.k >= 1, "throttle k below 1");
  ABSL_RAW_CHECK(options.window > absl::ZeroDuration(), "empty window");
  ABSL_RAW_CHECK(options.buckets >= 1, "no buckets");
}

int64_t AdaptiveThrottle::IndexOf(absl::Time t) const {
  absl::Duration remainder;
  return absl::IDivDuration(t - absl::UnixEpoch(), bucket_width_, &remainder);
}

AdaptiveThrottle::Bucket* AdaptiveThrottle::BucketOf(absl::Time t) {
  const int64_t index = IndexOf(t);
  newest_ = std::max(newest_, index);
  if (index <= newest_ - buckets_) return nullptr;  // left the window
  Bucket& b = ring_[((index % buckets_) + buckets_) % buckets_];
  if (b.index < index) b = Bucket{index};
  return b.index == index ? &b : nullptr;
}

double AdaptiveThrottle::ProbabilityAt(int64_t now_index) const {
  int64_t requests = 0, accepts = 0;
  for (const Bucket& b : ring_) {
    if (b.index <= now_index - buckets_ || b.index > now_index) continue;
    requests += b.answered + b.throttled;
    // Still unanswered after its slot closed: refused until answered.
    if (b.index < now_index) requests += b.sent - b.answered;
    accepts += b.accepts;
  }
  return std::max(0.0, (requests - k_ * accepts) / (requests + 1.0));
}

bool AdaptiveThrottle::Admit(absl::Time now, double draw) {
  absl::MutexLock lock(&mu_);
  const bool send = draw >= ProbabilityAt(IndexOf(now));
  if (Bucket* b = BucketOf(now)) ++(send ? b->sent : b->throttled);
  return send;
}

void AdaptiveThrottle::Answered(absl::Time sent, absl::StatusCode code) {
  absl::MutexLock lock(&mu_);
  Bucket* b = BucketOf(sent);
  // An answer whose send was never counted (its slot was recycled) has
  // nothing to end.
  if (b == nullptr || b->answered >= b->sent) return;
  ++b->answered;
  b->accepts += !IsRefusal(code);
}

double AdaptiveThrottle::RefusalProbability(absl::Time now) {
  absl::MutexLock lock(&mu_);
  return ProbabilityAt(IndexOf(now));
}

}  // namespace tessera
