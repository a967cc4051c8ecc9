#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tessera {

// Label values of one series, in the order of the family's label names.
using LabelValues = std::vector<std::string>;

// A small Prometheus metrics registry: counter, gauge and histogram
// families with labels, rendered in the text exposition format (0.0.4).
// Thread-safe; series are created on first use and never removed.
class MetricsRegistry {
 public:
  class Counter {
   public:
    void Increment(const LabelValues& labels, double by = 1)
        ABSL_LOCKS_EXCLUDED(mu_);
    // For a total counted elsewhere (a component's own tally): the series
    // becomes `total`, or stays where it is if that is higher, so it
    // never decreases.
    void SetTotal(const LabelValues& labels, double total)
        ABSL_LOCKS_EXCLUDED(mu_);

   private:
    friend class MetricsRegistry;
    absl::Mutex mu_;
    std::map<LabelValues, double> values_ ABSL_GUARDED_BY(mu_);
  };
  class Gauge {
   public:
    void Set(const LabelValues& labels, double value) ABSL_LOCKS_EXCLUDED(mu_);
    // Drops every series (for gauges describing a set that changes, such
    // as the gpulets of the plan in force).
    void Clear() ABSL_LOCKS_EXCLUDED(mu_);

   private:
    friend class MetricsRegistry;
    absl::Mutex mu_;
    std::map<LabelValues, double> values_ ABSL_GUARDED_BY(mu_);
  };
  class Histogram {
   public:
    void Observe(const LabelValues& labels, double value)
        ABSL_LOCKS_EXCLUDED(mu_);

   private:
    friend class MetricsRegistry;
    struct Series {
      std::vector<uint64_t> buckets;  // cumulative at render time
      double sum = 0;
      uint64_t count = 0;
    };
    std::vector<double> bounds_;  // ascending upper bounds (+Inf implied)
    absl::Mutex mu_;
    std::map<LabelValues, Series> series_ ABSL_GUARDED_BY(mu_);
  };

  // Families live as long as the registry. Names must be valid Prometheus
  // names; a name is registered once (CHECK).
  Counter* AddCounter(const std::string& name, const std::string& help,
                      std::vector<std::string> labels) ABSL_LOCKS_EXCLUDED(mu_);
  Gauge* AddGauge(const std::string& name, const std::string& help,
                  std::vector<std::string> labels) ABSL_LOCKS_EXCLUDED(mu_);
  Histogram* AddHistogram(const std::string& name, const std::string& help,
                          std::vector<std::string> labels,
                          std::vector<double> bounds) ABSL_LOCKS_EXCLUDED(mu_);

  // The text exposition of every family, in registration order.
  std::string Render() const ABSL_LOCKS_EXCLUDED(mu_);

  // Latency buckets in seconds (1 ms .. 10 s).
  static std::vector<double> LatencyBuckets();

 private:
  struct Family {
    std::string name, help, type;
    std::vector<std::string> labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  Family* Add(const std::string& name, const std::string& help,
              const std::string& type, std::vector<std::string> labels)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Family>> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
