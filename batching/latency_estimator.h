#pragma once

#include <map>
#include <string>

#include "absl/time/time.h"
#include "profile.pb.h"

namespace tessera {

// Execution-time estimates L(b) of the models on one gpulet, in the units the
// dispatcher works in. Seeded from a profile at the gpulet's share or from
// latencies measured at warm-up, then refined by every measured batch
// (exponentially weighted). Between known batch sizes the estimate is
// interpolated linearly; above the largest it is extrapolated with the
// slope of the two largest points (or proportionally from a single point);
// below the smallest it is the smallest point's value. Not thread-safe: the
// owner serialises access.
class LatencyEstimator {
 public:
  // Weight of a new measurement in the running average.
  explicit LatencyEstimator(double ewma_weight = 0.2)
      : ewma_weight_(ewma_weight) {}

  // Sets the estimate for (model, batch) outright (profiles, warm-up).
  void Seed(const std::string& model, int batch_size, absl::Duration latency);
  // Seeds from every profile point whose share is closest to
  // `share_percent`.
  void SeedFromProfile(const ModelProfile& profile, double share_percent);
  // Folds one measurement into the estimate.
  void Observe(const std::string& model, int batch_size,
               absl::Duration latency);

  bool Known(const std::string& model) const;
  // Estimated execution time; ZeroDuration for an unknown model.
  absl::Duration Predict(const std::string& model, int batch_size) const;

 private:
  double ewma_weight_;
  // model -> batch size -> latency (ms)
  std::map<std::string, std::map<int, double>> points_ms_;
};

}  // namespace tessera
