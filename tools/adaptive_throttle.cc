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

void AdaptiveThrottle::Count(absl::Time t, bool accepted) {
  const int64_t index = IndexOf(t);
  newest_ = std::max(newest_, index);
  if (index <= newest_ - buckets_) return;  // left the window
  Bucket& b = ring_[((index % buckets_) + buckets_) % buckets_];
  if (b.index != index) b = Bucket{index, 0, 0};
  ++b.requests;
  b.accepts += accepted;
}

double AdaptiveThrottle::ProbabilityAt(int64_t now_index) const {
  int64_t requests = 0, accepts = 0;
  for (const Bucket& b : ring_) {
    if (b.index > now_index - buckets_ && b.index <= now_index) {
      requests += b.requests;
      accepts += b.accepts;
    }
  }
  return std::max(0.0, (requests - k_ * accepts) / (requests + 1.0));
}

bool AdaptiveThrottle::Admit(absl::Time now, double draw) {
  absl::MutexLock lock(&mu_);
  if (draw >= ProbabilityAt(IndexOf(now))) return true;
  Count(now, /*accepted=*/false);
  return false;
}

void AdaptiveThrottle::Answered(absl::Time sent, absl::StatusCode code) {
  absl::MutexLock lock(&mu_);
  Count(sent, !IsRefusal(code));
}

double AdaptiveThrottle::RefusalProbability(absl::Time now) {
  absl::MutexLock lock(&mu_);
  return ProbabilityAt(IndexOf(now));
}

}  // namespace tessera
