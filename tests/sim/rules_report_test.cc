#include "sim/rules_report.h"

#include <set>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(SuiteHalfTest, HalvesSplitTheSuiteAndEachHoldsEveryWorkloadAndFactor) {
  const std::vector<SuiteCase> all = SuiteHalf("all");
  const std::vector<SuiteCase> calibration = SuiteHalf("calibration");
  const std::vector<SuiteCase> held_out = SuiteHalf("held-out");
  ASSERT_EQ(all.size(), 30u);  // 10 workloads x {3, 5, 10}
  EXPECT_EQ(calibration.size(), 15u);
  EXPECT_EQ(held_out.size(), 15u);
  std::set<std::string> seen;
  for (const auto* half : {&calibration, &held_out}) {
    std::set<std::string> workloads;
    std::set<double> factors;
    for (const SuiteCase& c : *half) {
      EXPECT_TRUE(seen.insert(c.label()).second) << c.label();
      EXPECT_EQ(c.calibration, half == &calibration) << c.label();
      workloads.insert(c.workload.name);
      factors.insert(c.slo_factor);
    }
    EXPECT_EQ(workloads.size(), 10u);
    EXPECT_EQ(factors, (std::set<double>{3, 5, 10}));
  }
  EXPECT_EQ(seen.size(), all.size());
}

}  // namespace
}  // namespace tessera
