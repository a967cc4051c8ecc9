#include "batching/latency_estimator.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

using absl::Milliseconds;

TEST(LatencyEstimatorTest, InterpolatesAndExtrapolates) {
  LatencyEstimator e;
  e.Seed("m", 2, Milliseconds(10));
  e.Seed("m", 6, Milliseconds(30));
  EXPECT_EQ(e.Predict("m", 4), Milliseconds(20));
  EXPECT_EQ(e.Predict("m", 1), Milliseconds(10));   // clamps below
  EXPECT_EQ(e.Predict("m", 10), Milliseconds(50));  // slope 5 ms/item
  EXPECT_EQ(e.Predict("unknown", 4), absl::ZeroDuration());
  EXPECT_FALSE(e.Known("unknown"));
}

TEST(LatencyEstimatorTest, SinglePointScalesProportionally) {
  LatencyEstimator e;
  e.Seed("m", 2, Milliseconds(10));
  EXPECT_EQ(e.Predict("m", 4), Milliseconds(20));
}

TEST(LatencyEstimatorTest, ObserveIsExponentiallyWeighted) {
  LatencyEstimator e(/*ewma_weight=*/0.5);
  e.Observe("m", 1, Milliseconds(10));  // first measurement taken as is
  e.Observe("m", 1, Milliseconds(20));
  EXPECT_EQ(e.Predict("m", 1), Milliseconds(15));
}

TEST(LatencyEstimatorTest, SeedsFromProfilePointsOfNearestShare) {
  ModelProfile p;
  p.set_model("m");
  for (auto [b, share, ms] : {std::tuple{1, 50.0, 4.0},
                              {4, 50.0, 10.0},
                              {1, 100.0, 2.0},
                              {4, 100.0, 5.0}}) {
    LatencyPoint* pt = p.add_latency();
    pt->set_batch_size(b);
    pt->set_share_percent(share);
    pt->set_latency_ms(ms);
  }
  LatencyEstimator e;
  e.SeedFromProfile(p, 60);
  EXPECT_EQ(e.Predict("m", 1), Milliseconds(4));
  EXPECT_EQ(e.Predict("m", 4), Milliseconds(10));
}

}  // namespace
}  // namespace tessera
