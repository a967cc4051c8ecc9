#include "common/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(MetricsRegistryTest, RendersTheTextExpositionFormat) {
  MetricsRegistry r;
  auto* c = r.AddCounter("t_requests_total", "Requests.\nSecond line \\ end",
                         {"model", "code"});
  auto* g = r.AddGauge("t_epoch", "Epoch.", {});
  auto* h = r.AddHistogram("t_latency_seconds", "Latency.", {"model"},
                           {0.1, 0.01, 1});  // unsorted on purpose
  c->Increment({"a\"b", "OK"});
  c->Increment({"a\"b", "OK"}, 2);
  c->Increment({"line\nbreak\\", "NOT_FOUND"});
  g->Set({}, 7);
  h->Observe({"m"}, 0.005);
  h->Observe({"m"}, 0.05);
  h->Observe({"m"}, 5);
  const std::string text = r.Render();
  EXPECT_THAT(text, HasSubstr("# HELP t_requests_total Requests.\\nSecond "
                              "line \\\\ end\n# TYPE t_requests_total "
                              "counter\n"));
  EXPECT_THAT(text,
              HasSubstr("t_requests_total{model=\"a\\\"b\",code=\"OK\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("t_requests_total{model=\"line\\nbreak\\\\\","
                              "code=\"NOT_FOUND\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE t_epoch gauge\nt_epoch 7\n"));
  // Cumulative buckets in ascending order, +Inf, sum and count.
  EXPECT_THAT(text,
              HasSubstr("t_latency_seconds_bucket{model=\"m\",le=\"0.01\"} 1\n"
                        "t_latency_seconds_bucket{model=\"m\",le=\"0.1\"} 2\n"
                        "t_latency_seconds_bucket{model=\"m\",le=\"1\"} 2\n"
                        "t_latency_seconds_bucket{model=\"m\",le=\"+Inf\"} 3\n"
                        "t_latency_seconds_sum{model=\"m\"} 5.055\n"
                        "t_latency_seconds_count{model=\"m\"} 3\n"));
  // Families in registration order.
  EXPECT_LT(text.find("t_requests_total"), text.find("t_epoch"));
  EXPECT_LT(text.find("t_epoch"), text.find("t_latency_seconds"));
}

// A total kept elsewhere, copied in before each scrape: the counter follows
// it up and never goes back down.
TEST(MetricsRegistryTest, CounterSetTotalNeverDecreases) {
  MetricsRegistry r;
  auto* c = r.AddCounter("t_plans_total", "Plans.", {});
  c->SetTotal({}, 3);
  EXPECT_THAT(r.Render(),
              HasSubstr("# TYPE t_plans_total counter\nt_plans_total 3\n"));
  c->SetTotal({}, 2);
  EXPECT_THAT(r.Render(), HasSubstr("t_plans_total 3\n"));
  c->SetTotal({}, 5);
  EXPECT_THAT(r.Render(), HasSubstr("t_plans_total 5\n"));
}

TEST(MetricsRegistryTest, GaugeClearDropsSeries) {
  MetricsRegistry r;
  auto* g = r.AddGauge("t_share", "Share.", {"gpulet"});
  g->Set({"a"}, 50);
  g->Clear();
  g->Set({"b"}, 100);
  const std::string text = r.Render();
  EXPECT_THAT(text, ::testing::Not(HasSubstr("gpulet=\"a\"")));
  EXPECT_THAT(text, HasSubstr("t_share{gpulet=\"b\"} 100\n"));
}

}  // namespace
}  // namespace tessera
