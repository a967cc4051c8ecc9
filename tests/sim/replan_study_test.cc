// The re-planning study and PlanHoldScale on iGniter's V100 measurements
// (../shared/data, read at run time).
#include "sim/replan_study.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/policy_registry.h"
#include "sim/throughput_search.h"
#include "sim/v100_workload.h"

namespace tessera {
namespace {

const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";

// alexnet alone on one V100 at 5x its batch-1 latency, 200 req/s.
struct AlexnetAlone {
  std::unique_ptr<V100Setup> setup;
  ClusterSnapshot snapshot;
  SimOptions options;
  AlexnetAlone() {
    auto s = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return;
    setup = *std::move(s);
    snapshot = MakeV100Snapshot(*setup, 1, {{"alexnet", 200}}, 5);
    options.duration = absl::Seconds(10);
    options.min_requests = 1000;
  }
};

TEST(PlanHoldScaleTest, TheLargestMultipleThePlanHolds) {
  AlexnetAlone f;
  ASSERT_NE(f.setup, nullptr);
  const ClusterSimulator sim(f.setup->truth.get(), Configs(f.snapshot));
  auto plan = PolicyRegistry::Create("sbp", PolicyOptions());
  ASSERT_TRUE(plan.ok());
  auto p = (*plan)->Schedule(f.snapshot);
  ASSERT_TRUE(p.ok()) << p.status();
  const double hold = PlanHoldScale(*p, f.snapshot, sim, f.options);
  ASSERT_GT(hold, 1);
  auto violations = [&](double m) {
    std::map<std::string, double> rates = {{"alexnet", 200 * m}};
    SimOptions o = f.options;
    o.duration = absl::Seconds(20);
    return sim.Run(*p, rates, o).max_model_violation_fraction();
  };
  EXPECT_LE(violations(hold), 0.01);
  EXPECT_GT(violations(hold * 1.1), 0.01);
  // At rates it does not hold: 0; and a plan that is an error holds none.
  ClusterSnapshot far = f.snapshot;
  far.models[0].rate_rps *= 2 * hold;
  EXPECT_EQ(PlanHoldScale(*p, far, sim, f.options), 0);
  EXPECT_EQ(PlanHoldScale(
                [](double) -> absl::StatusOr<Plan> {
                  return absl::FailedPreconditionError("no plan");
                },
                f.snapshot, sim, f.options),
            0);
}

// Rates that do not change: the plan in force is kept, and the plan from
// scratch is the same plan, so nothing moves and both hold as much.
TEST(ReplanStudyTest, UnchangedRatesMoveNothing) {
  AlexnetAlone f;
  ASSERT_NE(f.setup, nullptr);
  PolicyOptions policy;
  policy.interference = f.setup->linear;
  ReplanStudy::Options options;
  options.gpus = 2;
  options.sim = f.options;
  options.spread = 0;
  options.changes = 1;
  const ReplanStudy study(f.setup.get(), options);
  SuiteCase c;
  c.workload = {"alexnet+resnet50", {"alexnet", "resnet50"}};
  c.slo_factor = 5;
  auto results = study.Run("tessera", policy, {c});
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 1u);
  const ReplanStudy::CaseResult& r = (*results)[0];
  ASSERT_TRUE(r.planned);
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_TRUE(r.changes[0].kept);
  EXPECT_EQ(r.changes[0].moved_incremental, 0);
  EXPECT_GT(r.changes[0].hold_incremental, 1);
  EXPECT_DOUBLE_EQ(r.changes[0].ratio(), 1);
}

}  // namespace
}  // namespace tessera
