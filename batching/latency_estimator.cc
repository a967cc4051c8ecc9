#include "batching/latency_estimator.h"

#include <cmath>
#include <iterator>
#include <limits>

namespace tessera {

void LatencyEstimator::Seed(const std::string& model, int batch_size,
                            absl::Duration latency) {
  points_ms_[model][batch_size] = absl::ToDoubleMilliseconds(latency);
}

void LatencyEstimator::SeedFromProfile(const ModelProfile& profile,
                                       double share_percent) {
  double best_share = -1;
  double best_gap = std::numeric_limits<double>::infinity();
  for (const LatencyPoint& p : profile.latency()) {
    const double gap = std::fabs(p.share_percent() - share_percent);
    if (gap < best_gap) {
      best_gap = gap;
      best_share = p.share_percent();
    }
  }
  for (const LatencyPoint& p : profile.latency()) {
    if (p.share_percent() == best_share && p.latency_ms() > 0) {
      points_ms_[profile.model()][p.batch_size()] = p.latency_ms();
    }
  }
}

void LatencyEstimator::Observe(const std::string& model, int batch_size,
                               absl::Duration latency) {
  const double ms = absl::ToDoubleMilliseconds(latency);
  auto& points = points_ms_[model];
  auto it = points.find(batch_size);
  if (it == points.end()) {
    points[batch_size] = ms;
  } else {
    it->second = (1 - ewma_weight_) * it->second + ewma_weight_ * ms;
  }
}

bool LatencyEstimator::Known(const std::string& model) const {
  auto it = points_ms_.find(model);
  return it != points_ms_.end() && !it->second.empty();
}

absl::Duration LatencyEstimator::Predict(const std::string& model,
                                         int batch_size) const {
  auto mit = points_ms_.find(model);
  if (mit == points_ms_.end() || mit->second.empty()) {
    return absl::ZeroDuration();
  }
  const std::map<int, double>& points = mit->second;
  auto hi = points.lower_bound(batch_size);
  double ms;
  if (hi != points.end() && hi->first == batch_size) {
    ms = hi->second;
  } else if (hi == points.begin()) {
    ms = hi->second;  // below the smallest known batch
  } else if (hi == points.end()) {
    auto last = std::prev(points.end());
    if (points.size() == 1) {
      ms = last->second * batch_size / last->first;
    } else {
      auto before = std::prev(last);
      const double slope = std::max(
          0.0, (last->second - before->second) / (last->first - before->first));
      ms = last->second + slope * (batch_size - last->first);
    }
  } else {
    auto lo = std::prev(hi);
    const double t =
        static_cast<double>(batch_size - lo->first) / (hi->first - lo->first);
    ms = lo->second + t * (hi->second - lo->second);
  }
  return absl::Microseconds(std::llround(ms * 1000.0));
}

}  // namespace tessera
