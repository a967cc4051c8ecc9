#include "scheduler/planning_rules.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(PlanningRulesTest, PresetsSetEveryAdditionOnOrOff) {
  const PlanningRules paper = PresetRules(RULES_PRESET_PAPER);
  EXPECT_EQ(paper.shared().latency_headroom(), 1.0);
  EXPECT_EQ(paper.shared().rate_headroom(), 1.0);
  EXPECT_EQ(paper.shared().whole_gpu_latency_headroom(), 1.0);
  EXPECT_FALSE(paper.shared().queueing_check());
  EXPECT_FALSE(paper.shared().burst_caps());
  EXPECT_FALSE(paper.shared().burst_bound());
  EXPECT_FALSE(paper.shared().bulk_queue_wait());
  EXPECT_FALSE(paper.shared().round_robin_arrivals());
  EXPECT_FALSE(paper.shared().lone_batch_queue());
  EXPECT_FALSE(paper.shared().lone_queue_dispatcher());
  EXPECT_EQ(paper.gpulet().interference_check(),
            GPULET_INTERFERENCE_CHECK_PAPER);
  EXPECT_EQ(paper.gpulet().knee_rule(), GPULET_KNEE_RULE_ARTIFACT);
  EXPECT_FALSE(paper.gpulet().one_gpulet_when_smaller());
  EXPECT_FALSE(paper.igniter().replicas());
  EXPECT_FALSE(paper.igniter().queueing_check());
  EXPECT_FALSE(paper.igniter().latency_floor());
  EXPECT_EQ(paper.igniter().whole_gpu_batch1_latency_headroom(), 1.0);
  EXPECT_FALSE(paper.las().tail_wait());
  EXPECT_FALSE(paper.las().collection_time());
  EXPECT_FALSE(paper.las().replicas());
  EXPECT_FALSE(paper.las().interfered_queue());
  EXPECT_FALSE(paper.las().tail_wait_slo_only());
  EXPECT_FALSE(paper.inss().fill_wait());
  EXPECT_FALSE(paper.inss().bda_repair());
  const PlanningRules tessera = PresetRules(RULES_PRESET_TESSERA);
  EXPECT_TRUE(tessera.shared().queueing_check());
  EXPECT_TRUE(tessera.shared().burst_caps());
  EXPECT_TRUE(tessera.shared().burst_bound());
  EXPECT_TRUE(tessera.shared().bulk_queue_wait());
  EXPECT_TRUE(tessera.shared().round_robin_arrivals());
  EXPECT_TRUE(tessera.shared().lone_batch_queue());
  EXPECT_TRUE(tessera.shared().lone_queue_dispatcher());
  EXPECT_FALSE(tessera.las().tail_wait_slo_only());
  EXPECT_EQ(tessera.shared().burst_tail(), 0.0002);
  EXPECT_EQ(tessera.shared().whole_gpu_latency_headroom(), 1.05);
  EXPECT_EQ(tessera.shared().burst_max_marginal_load(), 0.8);
  EXPECT_EQ(tessera.gpulet().knee_rule(),
            GPULET_KNEE_RULE_ARTIFACT_THEN_PER_SHARE);
  EXPECT_TRUE(tessera.gpulet().one_gpulet_when_smaller());
  EXPECT_TRUE(tessera.gpulet().interference_within_headroom());
  EXPECT_FALSE(paper.gpulet().interference_within_headroom());
  EXPECT_TRUE(tessera.igniter().latency_floor());
  EXPECT_TRUE(tessera.inss().bda_repair());
  // The queueing tails: the paper's 0.005 everywhere (unused there), and
  // each family's calibrated one under tessera.
  for (const PlanningRules* r : {&paper}) {
    EXPECT_EQ(r->shared().queueing_tail(), 0.005);
    EXPECT_EQ(r->igniter().queueing_tail(), 0.005);
    EXPECT_EQ(r->las().queueing_tail(), 0.005);
    EXPECT_EQ(r->inss().queueing_tail(), 0.005);
  }
  EXPECT_EQ(tessera.shared().queueing_tail(), 0.01);
  EXPECT_EQ(tessera.igniter().queueing_tail(), 0.0075);
  EXPECT_EQ(tessera.igniter().whole_gpu_batch1_latency_headroom(), 1.05);
  EXPECT_EQ(tessera.las().queueing_tail(), 0.005);
  EXPECT_EQ(tessera.inss().queueing_tail(), 0.0075);
  EXPECT_EQ(DescribeRules(paper), "paper");
  EXPECT_EQ(DescribeRules(tessera), "tessera");
}

TEST(PlanningRulesTest, SetFieldsOverrideThePreset) {
  auto rules =
      RulesFromFlags("paper",
                     "shared { burst_caps: true } gpulet { interference_check: "
                     "GPULET_INTERFERENCE_CHECK_STRICT }");
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_TRUE(rules->shared().burst_caps());
  EXPECT_FALSE(rules->shared().queueing_check());  // still the paper's
  EXPECT_EQ(rules->gpulet().interference_check(),
            GPULET_INTERFERENCE_CHECK_STRICT);
  const std::string d = DescribeRules(*rules);
  EXPECT_NE(d.find("paper + "), std::string::npos) << d;
  EXPECT_NE(d.find("burst_caps: true"), std::string::npos) << d;
  EXPECT_EQ(d.find("queueing_check"), std::string::npos) << d;
  // An unset preset is tessera's.
  PlanningRules empty;
  auto resolved = ResolvePlanningRules(empty);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->preset(), RULES_PRESET_TESSERA);
  EXPECT_EQ(resolved->shared().latency_headroom(), 1.1);
}

TEST(PlanningRulesTest, BadValuesAreRejectedWithTheField) {
  EXPECT_EQ(ParseRulesPreset("papers").status().code(),
            absl::StatusCode::kInvalidArgument);
  auto low = RulesFromFlags("tessera", "shared { rate_headroom: 0.9 }");
  EXPECT_EQ(low.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(low.status().message().find("shared.rate_headroom"),
            std::string::npos);
  auto whole =
      RulesFromFlags("tessera", "shared { whole_gpu_latency_headroom: 0.95 }");
  EXPECT_EQ(whole.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(whole.status().message().find("shared.whole_gpu_latency_headroom"),
            std::string::npos);
  auto igniter_whole = RulesFromFlags(
      "tessera", "igniter { whole_gpu_batch1_latency_headroom: 0.95 }");
  EXPECT_EQ(igniter_whole.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(igniter_whole.status().message().find(
                "igniter.whole_gpu_batch1_latency_headroom"),
            std::string::npos);
  auto tail = RulesFromFlags("tessera", "shared { queueing_tail: 0 }");
  EXPECT_EQ(tail.status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* family : {"igniter", "las", "inss"}) {
    for (const char* value : {"0", "0.5"}) {
      auto t = RulesFromFlags(
          "tessera", std::string(family) + " { queueing_tail: " + value + " }");
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument)
          << family << " " << value;
      EXPECT_NE(
          t.status().message().find(std::string(family) + ".queueing_tail"),
          std::string::npos)
          << t.status();
    }
  }
  auto burst = RulesFromFlags("tessera", "shared { burst_tail: 0.5 }");
  EXPECT_EQ(burst.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(burst.status().message().find("shared.burst_tail"),
            std::string::npos);
  for (const char* text :
       {"gpulet { interference_headroom: 0.5 }",
        "gpulet { interference_headroom: 1.03 interference_within_headroom: "
        "true }"}) {
    auto ih = RulesFromFlags("tessera", text);
    EXPECT_EQ(ih.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(ih.status().message().find("gpulet.interference_headroom"),
              std::string::npos)
        << text;
  }
  EXPECT_TRUE(RulesFromFlags("tessera",
                             "gpulet { interference_within_headroom: false "
                             "interference_headroom: 1.03 }")
                  .ok());
  auto knee = RulesFromFlags(
      "tessera", "gpulet { knee_rule: GPULET_KNEE_RULE_UNSPECIFIED }");
  EXPECT_EQ(knee.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(knee.status().message().find("gpulet.knee_rule"),
            std::string::npos);
  auto marginal =
      RulesFromFlags("tessera", "shared { burst_max_marginal_load: 1.5 }");
  EXPECT_EQ(marginal.status().code(), absl::StatusCode::kInvalidArgument);
  auto frac =
      RulesFromFlags("tessera", "gpulet { artifact_min_rate_fraction: 1.5 }");
  EXPECT_EQ(frac.status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* bad :
       {"inss { actor_samples: -1 }", "inss { actor_sample_temperature: 0 }",
        "tessera { fewest_gpus_min_room: 0.5 }",
        "tessera { fewest_gpus_min_room: 5 }"}) {
    auto r = RulesFromFlags("tessera", bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  auto text = RulesFromFlags("tessera", "shared { no_such_field: 1 }");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
