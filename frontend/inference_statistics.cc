#include "frontend/inference_statistics.h"

#include <algorithm>

namespace tessera {
namespace {

void Add(inference::StatisticDuration* d, absl::Duration duration) {
  d->set_count(d->count() + 1);
  d->set_ns(d->ns() + static_cast<uint64_t>(std::max<int64_t>(
                          0, absl::ToInt64Nanoseconds(duration))));
}

}  // namespace

void InferenceStatistics::RecordRequest(const std::string& model,
                                        const std::string& version, bool ok,
                                        absl::Duration latency,
                                        absl::Duration queued,
                                        absl::Duration executed, int64_t items,
                                        absl::Time now) {
  if (version.empty()) return;
  absl::MutexLock lock(&mu_);
  inference::ModelStatistics& s = stats_[{model, version}];
  s.set_name(model);
  s.set_version(version);
  s.set_last_inference(static_cast<uint64_t>(absl::ToUnixMillis(now)));
  inference::InferStatistics* infer = s.mutable_inference_stats();
  if (!ok) {
    Add(infer->mutable_fail(), latency);
    return;
  }
  Add(infer->mutable_success(), latency);
  Add(infer->mutable_queue(), queued);
  Add(infer->mutable_compute_infer(), executed);
  s.set_inference_count(s.inference_count() + static_cast<uint64_t>(items));
}

void InferenceStatistics::RecordExecution(const std::string& model,
                                          const std::string& version,
                                          int64_t batch_size,
                                          absl::Duration executed) {
  absl::MutexLock lock(&mu_);
  inference::ModelStatistics& s = stats_[{model, version}];
  s.set_name(model);
  s.set_version(version);
  s.set_execution_count(s.execution_count() + 1);
  inference::InferBatchStatistics* batch = nullptr;
  for (auto& b : *s.mutable_batch_stats()) {
    if (b.batch_size() == static_cast<uint64_t>(batch_size)) batch = &b;
  }
  if (batch == nullptr) {
    batch = s.add_batch_stats();
    batch->set_batch_size(static_cast<uint64_t>(batch_size));
  }
  Add(batch->mutable_compute_infer(), executed);
}

inference::ModelStatisticsResponse InferenceStatistics::Report(
    const std::string& model, const std::string& version) const {
  inference::ModelStatisticsResponse out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, s] : stats_) {
    if (!model.empty() && key.first != model) continue;
    if (!version.empty() && key.second != version) continue;
    inference::ModelStatistics* copy = out.add_model_stats();
    *copy = s;
    std::sort(copy->mutable_batch_stats()->begin(),
              copy->mutable_batch_stats()->end(),
              [](const auto& a, const auto& b) {
                return a.batch_size() < b.batch_size();
              });
  }
  return out;
}

}  // namespace tessera
