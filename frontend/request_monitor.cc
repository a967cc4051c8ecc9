#include "frontend/request_monitor.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_format.h"

namespace tessera {

RequestMonitor::RequestMonitor(Options options, const Clock* clock)
    : options_(options),
      clock_(clock),
      start_(clock->Now()),
      width_(options.window / std::max(1, options.buckets)) {}

int64_t RequestMonitor::BucketOf(absl::Time t) const {
  absl::Duration rem;
  return absl::IDivDuration(t - start_, width_, &rem);
}

void RequestMonitor::Record(const std::string& model) {
  const int64_t bucket = BucketOf(clock_->Now());
  absl::MutexLock lock(&mu_);
  auto& q = counts_[model];
  if (!q.empty() && q.back().first == bucket) {
    ++q.back().second;
  } else {
    q.emplace_back(bucket, 1);
  }
  while (q.front().first <= bucket - options_.buckets) q.pop_front();
}

double RequestMonitor::Coverage() const {
  const absl::Duration since = clock_->Now() - start_;
  return std::min(1.0, absl::FDivDuration(since, options_.window));
}

std::map<std::string, double> RequestMonitor::Rates() const {
  return Rates(options_.window);
}

std::map<std::string, double> RequestMonitor::Rates(
    absl::Duration window) const {
  const absl::Time now = clock_->Now();
  const int64_t current = BucketOf(now);
  const int64_t buckets = std::clamp<int64_t>(
      absl::Ceil(window, width_) / width_, 1, options_.buckets);
  // The window is the current (partial) bucket and the buckets-1 before.
  const int64_t first = current - buckets + 1;
  const absl::Time from = std::max(start_, start_ + width_ * first);
  const double seconds = std::max(absl::ToDoubleSeconds(now - from), 1e-3);
  absl::MutexLock lock(&mu_);
  std::map<std::string, double> rates;
  for (const auto& [model, q] : counts_) {
    int64_t n = 0;
    for (const auto& [bucket, count] : q) n += bucket >= first ? count : 0;
    rates[model] = n / seconds;
  }
  return rates;
}

namespace {

// Whether `now` differs from `was` (req/s, counted over `window_s`) by more
// than `threshold` (relative) and by more than 3 sqrt of the expected
// count.
bool Significant(double was, double now, double threshold, double window_s) {
  const double expected = was * window_s;
  return std::abs(now - was) / was > threshold &&
         std::abs(now - was) * window_s > 3 * std::sqrt(expected);
}

}  // namespace

std::map<std::string, double> RisingRates(
    const std::map<std::string, double>& window_rates,
    const std::map<std::string, double>& short_rates, double threshold,
    double min_rate, double short_window_s) {
  std::map<std::string, double> rates = window_rates;
  for (const auto& [model, now] : short_rates) {
    double& rate = rates[model];
    const double was = std::max(min_rate, rate);
    if (was > 0 && now > was &&
        Significant(was, now, threshold, short_window_s)) {
      rate = now;
    }
  }
  return rates;
}

bool RatesChanged(const std::map<std::string, double>& planned,
                  const std::map<std::string, double>& observed,
                  double threshold, double min_rate, double window_s,
                  std::string* why) {
  std::set<std::string> models;
  for (const auto& [m, r] : planned) models.insert(m);
  for (const auto& [m, r] : observed) models.insert(m);
  double worst = 0;
  std::string worst_text;
  for (const std::string& m : models) {
    auto p = planned.find(m);
    auto o = observed.find(m);
    const double was = std::max(min_rate, p == planned.end() ? 0 : p->second);
    const double now = std::max(min_rate, o == observed.end() ? 0 : o->second);
    if (was <= 0) continue;
    const double change = std::abs(now - was) / was;
    if (Significant(was, now, threshold, window_s) && change > worst) {
      worst = change;
      worst_text = absl::StrFormat("%s %.1f -> %.1f req/s", m, was, now);
    }
  }
  if (worst > 0 && why != nullptr) *why = worst_text;
  return worst > 0;
}

}  // namespace tessera
