#include "common/metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera {
namespace {

// Label values escape backslash, double quote and newline; HELP text
// escapes backslash and newline.
std::string Escape(const std::string& s, bool quote) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return absl::StrFormat("%.9g", v);
}

std::string Labels(const std::vector<std::string>& names,
                   const LabelValues& values, const std::string& extra_name,
                   const std::string& extra_value) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    absl::StrAppend(&out, out.empty() ? "" : ",", names[i], "=\"",
                    Escape(values[i], true), "\"");
  }
  if (!extra_name.empty()) {
    absl::StrAppend(&out, out.empty() ? "" : ",", extra_name, "=\"",
                    extra_value, "\"");
  }
  return out.empty() ? "" : "{" + out + "}";
}

}  // namespace

void MetricsRegistry::Counter::Increment(const LabelValues& labels, double by) {
  absl::MutexLock lock(&mu_);
  values_[labels] += by;
}

void MetricsRegistry::Counter::SetTotal(const LabelValues& labels,
                                        double total) {
  absl::MutexLock lock(&mu_);
  double& value = values_[labels];
  if (total > value) value = total;
}

void MetricsRegistry::Gauge::Set(const LabelValues& labels, double value) {
  absl::MutexLock lock(&mu_);
  values_[labels] = value;
}

void MetricsRegistry::Gauge::Clear() {
  absl::MutexLock lock(&mu_);
  values_.clear();
}

void MetricsRegistry::Histogram::Observe(const LabelValues& labels,
                                         double value) {
  absl::MutexLock lock(&mu_);
  Series& s = series_[labels];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size(), 0);
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  if (it != bounds_.end()) ++s.buckets[it - bounds_.begin()];
  s.sum += value;
  ++s.count;
}

MetricsRegistry::Family* MetricsRegistry::Add(const std::string& name,
                                              const std::string& help,
                                              const std::string& type,
                                              std::vector<std::string> labels) {
  for (const auto& f : families_) {
    ABSL_RAW_CHECK(f->name != name, "metric family registered twice");
  }
  families_.push_back(std::make_unique<Family>());
  Family* f = families_.back().get();
  f->name = name;
  f->help = help;
  f->type = type;
  f->labels = std::move(labels);
  return f;
}

MetricsRegistry::Counter* MetricsRegistry::AddCounter(
    const std::string& name, const std::string& help,
    std::vector<std::string> labels) {
  absl::MutexLock lock(&mu_);
  Family* f = Add(name, help, "counter", std::move(labels));
  f->counter = std::make_unique<Counter>();
  return f->counter.get();
}

MetricsRegistry::Gauge* MetricsRegistry::AddGauge(
    const std::string& name, const std::string& help,
    std::vector<std::string> labels) {
  absl::MutexLock lock(&mu_);
  Family* f = Add(name, help, "gauge", std::move(labels));
  f->gauge = std::make_unique<Gauge>();
  return f->gauge.get();
}

MetricsRegistry::Histogram* MetricsRegistry::AddHistogram(
    const std::string& name, const std::string& help,
    std::vector<std::string> labels, std::vector<double> bounds) {
  absl::MutexLock lock(&mu_);
  Family* f = Add(name, help, "histogram", std::move(labels));
  f->histogram = std::make_unique<Histogram>();
  std::sort(bounds.begin(), bounds.end());
  f->histogram->bounds_ = std::move(bounds);
  return f->histogram.get();
}

std::vector<double> MetricsRegistry::LatencyBuckets() {
  return {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10};
}

std::string MetricsRegistry::Render() const {
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const auto& f : families_) {
    absl::StrAppend(&out, "# HELP ", f->name, " ", Escape(f->help, false),
                    "\n# TYPE ", f->name, " ", f->type, "\n");
    if (f->counter != nullptr || f->gauge != nullptr) {
      absl::Mutex& mu = f->counter ? f->counter->mu_ : f->gauge->mu_;
      absl::MutexLock series_lock(&mu);
      const auto& values = f->counter ? f->counter->values_ : f->gauge->values_;
      for (const auto& [labels, v] : values) {
        absl::StrAppend(&out, f->name, Labels(f->labels, labels, "", ""), " ",
                        FormatValue(v), "\n");
      }
      continue;
    }
    Histogram& h = *f->histogram;
    absl::MutexLock series_lock(&h.mu_);
    for (const auto& [labels, s] : h.series_) {
      uint64_t cumulative = 0;
      for (size_t i = 0; i < h.bounds_.size(); ++i) {
        cumulative += s.buckets[i];
        absl::StrAppend(
            &out, f->name, "_bucket",
            Labels(f->labels, labels, "le", FormatValue(h.bounds_[i])), " ",
            cumulative, "\n");
      }
      absl::StrAppend(&out, f->name, "_bucket",
                      Labels(f->labels, labels, "le", "+Inf"), " ", s.count,
                      "\n", f->name, "_sum", Labels(f->labels, labels, "", ""),
                      " ", FormatValue(s.sum), "\n", f->name, "_count",
                      Labels(f->labels, labels, "", ""), " ", s.count, "\n");
    }
  }
  return out;
}

}  // namespace tessera
