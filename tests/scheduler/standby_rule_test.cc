#include "scheduler/standby_rule.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(StandbyRuleTest, MoreThanOnePercentLateOverTwentyOrMoreCalls) {
  EXPECT_FALSE(ShouldSwitchToStandby(19, 19));  // too few answered
  EXPECT_TRUE(ShouldSwitchToStandby(20, 1));    // 5 %
  EXPECT_FALSE(ShouldSwitchToStandby(100, 1));  // exactly 1 %: holds
  EXPECT_TRUE(ShouldSwitchToStandby(100, 2));
  EXPECT_FALSE(ShouldSwitchToStandby(1000, 0));
}

}  // namespace
}  // namespace tessera
