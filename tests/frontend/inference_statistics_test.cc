#include "frontend/inference_statistics.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

absl::Duration Us(int64_t us) { return absl::Microseconds(us); }

// Two successful requests (batch 2 and 1) in one execution of batch 3, one
// failure, and a refusal before the version resolved (not counted).
TEST(InferenceStatisticsTest, CountsAsTritonReports) {
  InferenceStatistics stats;
  const absl::Time now = absl::FromUnixMillis(1'700'000'000'000);
  stats.RecordExecution("m", "1", 3, Us(500));
  stats.RecordRequest("m", "1", true, Us(900), Us(300), Us(500), 2, now);
  stats.RecordRequest("m", "1", true, Us(800), Us(200), Us(500), 1, now);
  stats.RecordRequest("m", "1", false, Us(50), Us(0), Us(0), 1, now);
  stats.RecordRequest("m", "", false, Us(10), Us(0), Us(0), 1, now);
  stats.RecordRequest("other", "2", true, Us(100), Us(10), Us(20), 1, now);

  const inference::ModelStatisticsResponse all = stats.Report("", "");
  ASSERT_EQ(all.model_stats_size(), 2);
  const inference::ModelStatisticsResponse r = stats.Report("m", "");
  ASSERT_EQ(r.model_stats_size(), 1);
  const inference::ModelStatistics& m = r.model_stats(0);
  EXPECT_EQ(m.name(), "m");
  EXPECT_EQ(m.version(), "1");
  EXPECT_EQ(m.last_inference(), 1'700'000'000'000u);
  EXPECT_EQ(m.inference_count(), 3u);
  EXPECT_EQ(m.execution_count(), 1u);
  const inference::InferStatistics& s = m.inference_stats();
  EXPECT_EQ(s.success().count(), 2u);
  EXPECT_EQ(s.success().ns(), 1'700'000u);
  EXPECT_EQ(s.fail().count(), 1u);
  EXPECT_EQ(s.fail().ns(), 50'000u);
  EXPECT_EQ(s.queue().ns(), 500'000u);
  EXPECT_EQ(s.compute_infer().ns(), 1'000'000u);
  ASSERT_EQ(m.batch_stats_size(), 1);
  EXPECT_EQ(m.batch_stats(0).batch_size(), 3u);
  EXPECT_EQ(m.batch_stats(0).compute_infer().count(), 1u);
  EXPECT_EQ(stats.Report("m", "2").model_stats_size(), 0);
}

}  // namespace
}  // namespace tessera
