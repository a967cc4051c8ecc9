#include "tools/scenario_runner.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(ScenarioRunnerTest, ParsesSchedules) {
  auto s = ScenarioRunner::ParseSchedule("0:0.5, 20:1,40:0");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[1].first, absl::Seconds(20));
  EXPECT_EQ((*s)[1].second, 1);
  EXPECT_EQ((*s)[2].second, 0);
  EXPECT_FALSE(ScenarioRunner::ParseSchedule("").ok());
  EXPECT_FALSE(ScenarioRunner::ParseSchedule("0:1,0:2").ok());  // not ascending
  EXPECT_FALSE(ScenarioRunner::ParseSchedule("0:-1").ok());
  EXPECT_FALSE(ScenarioRunner::ParseSchedule("10").ok());
}

}  // namespace
}  // namespace tessera
