#include "frontend/request_monitor.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(RequestMonitorTest, RateOverPartialThenSlidingWindow) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  RequestMonitor monitor({absl::Seconds(10), 10}, &clock);
  // 20 req/s for 5 s: the window is not full yet, the rate is over 5 s.
  for (int i = 0; i < 100; ++i) {
    monitor.Record("a");
    clock.Advance(absl::Milliseconds(50));
  }
  EXPECT_NEAR(monitor.Rates().at("a"), 20, 0.5);
  EXPECT_NEAR(monitor.Coverage(), 0.5, 1e-9);
  // Then 5 req/s for 10 s: the old arrivals leave the window.
  for (int i = 0; i < 50; ++i) {
    monitor.Record("a");
    clock.Advance(absl::Milliseconds(200));
  }
  EXPECT_NEAR(monitor.Rates().at("a"), 5, 0.6);
  EXPECT_EQ(monitor.Coverage(), 1);
  // Silence for a whole window: rate 0, model still listed.
  clock.Advance(absl::Seconds(11));
  EXPECT_EQ(monitor.Rates().at("a"), 0);
}

TEST(RequestMonitorTest, ModelsAreCountedSeparately) {
  FakeClock clock;
  RequestMonitor monitor({absl::Seconds(4), 4}, &clock);
  for (int i = 0; i < 40; ++i) {
    monitor.Record("a");
    if (i % 4 == 0) monitor.Record("b");
    clock.Advance(absl::Milliseconds(100));
  }
  auto rates = monitor.Rates();
  EXPECT_NEAR(rates.at("a"), 10, 0.5);
  EXPECT_NEAR(rates.at("b"), 2.5, 0.3);
  EXPECT_EQ(rates.count("c"), 0u);
}

// After a step from 10 to 40 req/s, a 2 s window sees the new rate while
// the 10 s window still averages in the old one; RisingRates plans for
// the new rate, and only where the rise is beyond noise.
TEST(RequestMonitorTest, AShortWindowSeesARiseFirst) {
  FakeClock clock(absl::FromUnixSeconds(1000));
  RequestMonitor monitor({absl::Seconds(10), 20}, &clock);
  for (int i = 0; i < 80; ++i) {  // 10 req/s for 8 s
    monitor.Record("a");
    monitor.Record("b");
    clock.Advance(absl::Milliseconds(100));
  }
  for (int i = 0; i < 80; ++i) {  // a: 40 req/s for 2 s
    monitor.Record("a");
    if (i % 4 == 0) monitor.Record("b");
    clock.Advance(absl::Milliseconds(25));
  }
  const auto window = monitor.Rates();
  const auto recent = monitor.Rates(absl::Seconds(2));
  EXPECT_NEAR(window.at("a"), 16, 1);
  EXPECT_NEAR(recent.at("a"), 40, 2);
  EXPECT_NEAR(recent.at("b"), 10, 1);
  // Longer than the monitor's window: its whole window.
  EXPECT_NEAR(monitor.Rates(absl::Seconds(60)).at("a"), window.at("a"), 1e-9);
  const auto plan_for = RisingRates(window, recent, 0.25, 1, 2);
  EXPECT_NEAR(plan_for.at("a"), recent.at("a"), 1e-9);
  EXPECT_NEAR(plan_for.at("b"), window.at("b"), 1e-9);
  // A rise within Poisson noise (3 -> 5 req/s over 2 s) is not taken.
  EXPECT_EQ(RisingRates({{"c", 3}}, {{"c", 5}}, 0.25, 1, 2).at("c"), 3);
}

TEST(RatesChangedTest, RelativeThresholdWithFloor) {
  // Over 100 s, Poisson noise is small next to these changes.
  std::string why;
  EXPECT_FALSE(RatesChanged({{"a", 100}}, {{"a", 120}}, 0.25, 1, 100, &why));
  EXPECT_TRUE(RatesChanged({{"a", 100}}, {{"a", 130}}, 0.25, 1, 100, &why));
  EXPECT_NE(why.find("a 100.0 -> 130.0"), std::string::npos) << why;
  EXPECT_TRUE(RatesChanged({{"a", 100}}, {{"a", 70}}, 0.25, 1, 100, nullptr));
  // Below the floor, noise does not count: 0.2 -> 0.9 req/s is 1 -> 1.
  EXPECT_FALSE(RatesChanged({{"a", 0.2}}, {{"a", 0.9}}, 0.25, 1, 100, nullptr));
  // A model the plan never saw that now has traffic.
  EXPECT_TRUE(
      RatesChanged({{"a", 10}}, {{"a", 10}, {"b", 5}}, 0.25, 1, 100, &why));
  EXPECT_NE(why.find("b 1.0 -> 5.0"), std::string::npos) << why;
  // Traffic that stopped.
  EXPECT_TRUE(RatesChanged({{"a", 10}}, {}, 0.25, 1, 100, nullptr));
}

TEST(RatesChangedTest, PoissonNoiseAtLowCountsIsIgnored) {
  // 2 req/s over 2 s: 4 arrivals expected, 6 seen is +50% but within
  // 3 sqrt(4) = 6 arrivals of noise.
  EXPECT_FALSE(RatesChanged({{"a", 2}}, {{"a", 3}}, 0.25, 1, 2, nullptr));
  // The same +50% over 60 s (120 expected, 180 seen) is real.
  EXPECT_TRUE(RatesChanged({{"a", 2}}, {{"a", 3}}, 0.25, 1, 60, nullptr));
  // A tenfold rise is real even over 2 s.
  EXPECT_TRUE(RatesChanged({{"a", 2}}, {{"a", 20}}, 0.25, 1, 2, nullptr));
}

}  // namespace
}  // namespace tessera
