#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace tessera {

// Per-model arrival rates over a sliding window, kept as counts in
// `buckets` equal time buckets (memory does not grow with the rate).
// Thread-safe.
class RequestMonitor {
 public:
  struct Options {
    absl::Duration window = absl::Seconds(20);
    int buckets = 20;
  };

  // `clock` must outlive the monitor; the window starts now.
  RequestMonitor(Options options, const Clock* clock);

  // Counts one arrival of `model` now.
  void Record(const std::string& model) ABSL_LOCKS_EXCLUDED(mu_);
  // Requests per second of each model seen so far, over the last window
  // (or since the monitor started, when that is shorter).
  std::map<std::string, double> Rates() const ABSL_LOCKS_EXCLUDED(mu_);
  // The same over the last `window` (rounded up to whole buckets, at most
  // the monitor's window).
  std::map<std::string, double> Rates(absl::Duration window) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // How much of a full window the rates cover (0..1): rates measured over
  // a short time right after start are noisy.
  double Coverage() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  int64_t BucketOf(absl::Time t) const;

  const Options options_;
  const Clock* clock_;
  const absl::Time start_;
  const absl::Duration width_;
  mutable absl::Mutex mu_;
  // Per model: (bucket index, count), oldest first, only the last window.
  std::map<std::string, std::deque<std::pair<int64_t, int64_t>>> counts_
      ABSL_GUARDED_BY(mu_);
};

// Whether `observed` rates (counted over `window_s` seconds) differ from
// the `planned` ones by more than `threshold` (relative) and by more than
// Poisson noise: with λ = planned x window arrivals expected, the observed
// count must be more than 3 sqrt(λ) away (at 2 req/s over 2 s a 50% swing
// is noise; at 200 req/s it is not). Rates below `min_rate` count as
// `min_rate`, so idle models do not trigger re-planning. Models missing
// from a map have rate 0. When true and `why` is set, it names the model
// with the largest significant change.
bool RatesChanged(const std::map<std::string, double>& planned,
                  const std::map<std::string, double>& observed,
                  double threshold, double min_rate, double window_s,
                  std::string* why);

// The rates to plan for: each model's `window_rates` rate, or its
// `short_rates` rate (counted over `short_window_s`) where that is higher
// by more than `threshold` and beyond Poisson noise (RatesChanged's test):
// a rise the long window has not caught up with yet.
std::map<std::string, double> RisingRates(
    const std::map<std::string, double>& window_rates,
    const std::map<std::string, double>& short_rates, double threshold,
    double min_rate, double short_window_s);

}  // namespace tessera
