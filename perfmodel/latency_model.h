#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "profile.pb.h"

namespace tessera {

// L(b, p) of one model on one device kind, built from a ModelProfile, plus
// the resource counters (L2 and DRAM utilisation) interference models use.
//
// Interpolation: along the batch axis linearly between profiled batch
// sizes (extrapolated with the slope of the last two points above the
// largest); along the share axis linearly in 1/p between the profiled
// shares that bracket p (latency of a compute-bound kernel scales like
// 1/p), clamped to the profiled range. The table is made monotone first:
// latency never decreases with the batch size (running maximum over b) and
// never increases with the share (running maximum towards smaller shares),
// because measured points carry noise and the policies' searches assume
// monotonicity. Immutable; thread-safe.
class LatencyModel {
 public:
  // The largest batch a profile may hold (the dense tables span 1..max).
  static constexpr int kMaxProfiledBatch = 4096;

  // INVALID_ARGUMENT for a profile without points or with a point outside
  // batch 1..kMaxProfiledBatch, share (0, 100] or a positive finite
  // latency.
  static absl::StatusOr<LatencyModel> FromProfile(const ModelProfile& profile);

  const std::string& model() const { return model_; }
  double LatencyMs(int batch, double share_percent) const;
  // Utilisation in percent (0 when the profile has none).
  double L2Util(int batch, double share_percent) const;
  double DramUtil(int batch, double share_percent) const;

  int max_batch() const { return batches_.back(); }
  // The profiled batch sizes and shares (ascending): the model is only
  // trusted inside them.
  const std::vector<int>& batches() const { return batches_; }
  const std::vector<double>& shares() const { return shares_; }
  // The largest batch size whose latency was profiled at shares()[i].
  int ProfiledUpTo(size_t share_index) const {
    return covered_[kLatency][share_index];
  }
  int64_t memory_bytes() const { return memory_bytes_; }

 private:
  enum Field { kLatency = 0, kL2 = 1, kDram = 2 };
  double Lookup(Field f, int batch, double share) const;
  double AtShare(Field f, size_t share_index, int batch) const;
  double AtShareSlow(Field f, size_t share_index, int batch) const;

  std::string model_;
  std::vector<int> batches_;    // ascending
  std::vector<double> shares_;  // ascending
  // [field][share index] -> batch -> value; only profiled batches present.
  std::vector<std::vector<std::map<int, double>>> table_;
  // [field][share index][batch] for batch 1..max_batch.
  std::vector<std::vector<std::vector<double>>> dense_;
  // [field][share index] -> largest profiled batch (0: none).
  std::vector<std::vector<int>> covered_;
  int64_t memory_bytes_ = 0;
};

// One LatencyModel per profile, by model name; the first profile that
// does not make one is the error.
absl::StatusOr<std::map<std::string, LatencyModel>> BuildLatencyModels(
    const std::map<std::string, ModelProfile>& profiles);

}  // namespace tessera
