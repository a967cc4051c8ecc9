// PlanRepair: a plan in force whose gpulet no longer holds today's rate
// keeps every gpulet that does and re-places only the broken one's rate.
#include "scheduler/plan_repair.h"

#include <memory>

#include "gtest/gtest.h"
#include "perfmodel/interference_model.h"
#include "scheduler/plan_check.h"
#include "scheduler/plan_ids.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using testing::LinearProfile;
using testing::Snapshot;

// L(b, p) = b * 100 / p ms, SLO 100 ms: a gpulet of p % serves at most
// 10 p req/s. X on a whole gpu0 (300 req/s) and Y on half of gpu1
// (200 req/s; at most 500 there), gpu2 unused.
struct Fixture {
  ClusterSnapshot snapshot = Snapshot(3);
  PolicyOptions options = testing::PaperRules();
  Fixture() {
    AddModel(&snapshot, LinearProfile("x", 0, 1), 300, 100);
    AddModel(&snapshot, LinearProfile("y", 0, 1), 200, 100);
    options.interference = std::make_shared<NoInterference>();
    Plan& p = snapshot.current_plan;
    p.set_policy("tessera");
    p.set_epoch(1);
    for (const auto& [gpu, share, model, rate] :
         {std::tuple{"gpu0", 100.0, "x", 300.0}, {"gpu1", 50.0, "y", 200.0}}) {
      DevicePlan* d = p.add_devices();
      d->set_backend_id("b0");
      d->set_device_id(gpu);
      GpuletPlan* g = d->add_gpulets();
      g->set_gpulet_id(absl::StrCat("b0/", gpu, "/g0"));
      g->set_share_percent(share);
      ModelAssignment* a = g->add_models();
      a->set_model(model);
      a->set_batch_size(1);
      a->set_rate_rps(rate);
    }
  }
  absl::StatusOr<Plan> Repair(double rate_scale = 1) const {
    auto inputs = PolicyInputs::FromSnapshot(snapshot, options);
    if (!inputs.ok()) return inputs.status();
    const GpuletPlacer placer(options.interference.get(),
                              options.rules.gpulet());
    const PlanRepair repair(inputs->get(), options.interference.get(), &placer,
                            false);
    auto plan = repair.Repair(snapshot.current_plan, "tessera", rate_scale);
    if (plan.ok()) {
      // Whatever it returns passes the shared check at today's rates.
      const PlanCheck check(inputs->get(), options.interference.get(), false);
      EXPECT_TRUE(check.Check(*plan).ok()) << plan->ShortDebugString();
    }
    return plan;
  }
};

TEST(PlanRepairTest, RePlacesOnlyTheGpuletThatBroke) {
  Fixture f;
  f.snapshot.models[1].rate_rps = 700;  // more than Y's 50 % serves
  auto plan = f.Repair();
  ASSERT_TRUE(plan.ok()) << plan.status();
  // X's gpulet is untouched; every other gpulet serves Y, 700 in all.
  int x_gpulets = 0, y_gpulets = 0;
  for (const DevicePlan& d : plan->devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      ASSERT_EQ(g.models_size(), 1);
      if (g.models(0).model() == "x") {
        ++x_gpulets;
        EXPECT_EQ(d.device_id(), "gpu0");
        EXPECT_EQ(g.share_percent(), 100);
      } else {
        ++y_gpulets;
      }
    }
  }
  EXPECT_EQ(x_gpulets, 1);
  EXPECT_GE(y_gpulets, 2);  // 700 req/s need more than one 60 %
  EXPECT_NEAR(PlannedRateRps(*plan, "x"), 300, 1e-6);
  EXPECT_NEAR(PlannedRateRps(*plan, "y"), 700, 1e-6);
  // Only Y's gpulets are new.
  Plan ids = *plan;
  EXPECT_EQ(AssignGpuletIds(f.snapshot.current_plan, &ids), y_gpulets);
}

TEST(PlanRepairTest, APlanThatHoldsIsNotRepairedButMayBeForRoom) {
  Fixture f;
  EXPECT_EQ(f.Repair().status().code(), absl::StatusCode::kFailedPrecondition);
  // Room for 3x: Y's 600 req/s break its 50 % (X's 900 still fit gpu0).
  auto roomy = f.Repair(3);
  ASSERT_TRUE(roomy.ok()) << roomy.status();
  Plan ids = *roomy;
  const int fresh = AssignGpuletIds(f.snapshot.current_plan, &ids);
  EXPECT_GE(fresh, 1);
  EXPECT_NEAR(PlannedRateRps(*roomy, "x"), 900, 1e-6);
  EXPECT_NEAR(PlannedRateRps(*roomy, "y"), 600, 1e-6);
}

TEST(PlanRepairTest, ADisplacedRateThatFitsNowhereIsExhausted) {
  Fixture f;
  f.snapshot.models[1].rate_rps = 5000;  // two free GPUs serve 2,000
  EXPECT_EQ(f.Repair().status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace tessera
