// ShareFill: a plan's new gpulets grow into the idle share of their GPUs,
// on the grid where the shared check confirms the plan, in proportion
// where it cannot; gpulets of the plan in force stay as they are.
#include "scheduler/share_fill.h"

#include <memory>
#include <tuple>

#include "gtest/gtest.h"
#include "perfmodel/interference_model.h"
#include "scheduler/time_share_solver.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using testing::LinearProfile;
using testing::Snapshot;

constexpr double kMaxScale = 4;
constexpr int kSteps = 10;

// L(b, p) = b * 100 / p ms, SLO 100 ms, no headroom: a gpulet of p %
// serves at most 10 p req/s.
struct Fixture {
  ClusterSnapshot snapshot = Snapshot(2);
  PolicyOptions options = testing::PaperRules();
  std::unique_ptr<PolicyInputs> inputs;
  std::unique_ptr<PlanCheck> check;

  explicit Fixture(double x_rps, double y_rps,
                   std::shared_ptr<const InterferenceModel> interference =
                       std::make_shared<NoInterference>(),
                   double z_rps = 0) {
    AddModel(&snapshot, LinearProfile("x", 0, 1), x_rps, 100);
    AddModel(&snapshot, LinearProfile("y", 0, 1), y_rps, 100);
    if (z_rps > 0) AddModel(&snapshot, LinearProfile("z", 0, 1), z_rps, 100);
    options.interference = std::move(interference);
    inputs = *PolicyInputs::FromSnapshot(snapshot, options);
    check = std::make_unique<PlanCheck>(inputs.get(),
                                        options.interference.get(), false);
  }
  ShareFill::Result Fill(const Plan& plan, const Plan& current,
                         bool whole_percents = true) const {
    const ShareFill fill(check.get(), AllowedShares(), whole_percents,
                         kMaxScale, kSteps);
    return fill.Fill(plan, current);
  }
};

// A neighbour gpulet above 30 % of the GPU triples a gpulet's latency; a
// smaller one does not slow it. Under it a fill can lower a plan's room.
class LargeNeighbourInterference : public InterferenceModel {
 public:
  double Factor(const Placement&, const Placement& other) const override {
    return other.share_percent > 30 ? 3 : 1;
  }
  std::string name() const override { return "large-neighbour"; }
};

double ShareOf(const Plan& plan, const std::string& model) {
  for (const DevicePlan& d : plan.devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      if (g.models(0).model() == model) return g.share_percent();
    }
  }
  return 0;
}

// X whole on gpu0 (300 of 1,000 req/s: room 3.33), Y on half of gpu1 (200
// of 500: room 2.5). All new: Y, alone on its GPU, takes all of it, and
// the room is then X's.
TEST(ShareFillTest, ANewGpuletTakesItsGpusIdleShare) {
  const Fixture f(300, 200);
  const Plan plan = testing::OneModelGpulets(
      {{"gpu0", 100.0, "x", 300.0}, {"gpu1", 50.0, "y", 200.0}});
  EXPECT_NEAR(f.check->ScaleMargin(plan, kMaxScale, kSteps), 2.5, 0.01);
  const ShareFill::Result r = f.Fill(plan, Plan());
  EXPECT_EQ(r.raised, 1);
  EXPECT_EQ(ShareOf(r.plan, "x"), 100);
  EXPECT_EQ(ShareOf(r.plan, "y"), 100);
  EXPECT_NEAR(r.margin, 10.0 / 3, 0.01);
  EXPECT_TRUE(f.check->Check(r.plan, 3.3).ok()) << r.plan.DebugString();
}

// The same plan in force: nothing is new, so nothing grows.
TEST(ShareFillTest, GpuletsOfThePlanInForceStay) {
  const Fixture f(300, 200);
  const Plan plan = testing::OneModelGpulets(
      {{"gpu0", 100.0, "x", 300.0}, {"gpu1", 50.0, "y", 200.0}});
  const ShareFill::Result r = f.Fill(plan, plan);
  EXPECT_EQ(r.raised, 0);
  EXPECT_EQ(r.plan.SerializeAsString(), plan.SerializeAsString());
  EXPECT_NEAR(r.margin, 2.5, 0.01);
}

// Two new gpulets on gpu0, 20 % each, X at 150 req/s (room 1.33) and Y at
// 50 (room 4): the idle 60 % goes to them in turn, the one grown least
// first (X 40, Y 40, X 50, Y 50), and the room is X's at 50 %: 3.33.
TEST(ShareFillTest, SeveralNewGpuletsOnAGpuGrowInTurn) {
  const Fixture f(150, 50);
  const Plan plan = testing::OneModelGpulets(
      {{"gpu0", 20.0, "x", 150.0}, {"gpu0", 20.0, "y", 50.0}});
  const ShareFill::Result r = f.Fill(plan, Plan());
  EXPECT_EQ(ShareOf(r.plan, "x"), 50);
  EXPECT_EQ(ShareOf(r.plan, "y"), 50);
  EXPECT_EQ(r.raised, 2);
  EXPECT_NEAR(r.margin, 10.0 / 3, 0.01);
}

// X at 300 req/s on 15 % and Y at 700 on 30 % of gpu0 break the check (a
// 15 % gpulet serves 150): the plan, as another family's planner might
// have made it, grows in proportion, 100 / 45 = 2.22x, shares rounded
// down to whole percents or to the grid; a gpulet of the plan in force
// keeps its share and the others fill the rest.
TEST(ShareFillTest, APlanTheCheckCannotConfirmGrowsInProportion) {
  const Fixture f(300, 700);
  const Plan plan = testing::OneModelGpulets(
      {{"gpu0", 15.0, "x", 300.0}, {"gpu0", 30.0, "y", 700.0}});
  ShareFill::Result r = f.Fill(plan, Plan());
  EXPECT_EQ(r.margin, 0);
  EXPECT_EQ(r.raised, 2);
  EXPECT_EQ(ShareOf(r.plan, "x"), 33);
  EXPECT_EQ(ShareOf(r.plan, "y"), 66);
  EXPECT_EQ(r.plan.devices(0).gpulets(1).models(0).batch_size(), 1);
  r = f.Fill(plan, Plan(), /*whole_percents=*/false);
  EXPECT_EQ(ShareOf(r.plan, "x"), 20);
  EXPECT_EQ(ShareOf(r.plan, "y"), 60);
  // An iGniter standby keeps its lead over the share.
  Plan with_standby = plan;
  with_standby.mutable_devices(0)
      ->mutable_gpulets(0)
      ->set_standby_share_percent(25);
  r = f.Fill(with_standby, Plan());
  EXPECT_EQ(r.plan.devices(0).gpulets(0).standby_share_percent(), 43);
  // X's gpulet in force stays at 15 %; Y takes the other 85.
  const Plan current = testing::OneModelGpulets({{"gpu0", 15.0, "x", 300.0}});
  r = f.Fill(plan, current);
  EXPECT_EQ(r.raised, 1);
  EXPECT_EQ(ShareOf(r.plan, "x"), 15);
  EXPECT_EQ(ShareOf(r.plan, "y"), 85);
  r = f.Fill(plan, current, /*whole_percents=*/false);
  EXPECT_EQ(ShareOf(r.plan, "y"), 80);
}

// gpu0: new X and Y, 20 % each at 100 req/s (room 2: a 20 % gpulet
// serves 200); gpu1: new Z alone, the same. Grown everywhere, X and Y
// reach 50/50 and slow each other 3x (166 req/s each: room 1.67), below
// the plan's 2: only the GPU with one new gpulet grows, and Z takes gpu1.
TEST(ShareFillTest, WhereGrowingEveryGpuLowersTheRoomOnlyLoneNewGpuletsGrow) {
  const Fixture f(100, 100, std::make_shared<LargeNeighbourInterference>(),
                  100);
  const Plan plan = testing::OneModelGpulets({{"gpu0", 20.0, "x", 100.0},
                                              {"gpu0", 20.0, "y", 100.0},
                                              {"gpu1", 20.0, "z", 100.0}});
  Plan both = plan;
  for (int i = 0; i < 2; ++i) {
    both.mutable_devices(0)->mutable_gpulets(i)->set_share_percent(50);
  }
  EXPECT_NEAR(f.check->ScaleMargin(plan, kMaxScale, kSteps), 2, 0.01);
  EXPECT_NEAR(f.check->ScaleMargin(both, kMaxScale, kSteps), 5.0 / 3, 0.01);
  const ShareFill::Result r = f.Fill(plan, Plan());
  EXPECT_EQ(r.raised, 1);
  EXPECT_EQ(ShareOf(r.plan, "x"), 20);
  EXPECT_EQ(ShareOf(r.plan, "y"), 20);
  EXPECT_EQ(ShareOf(r.plan, "z"), 100);
  EXPECT_NEAR(r.margin, 2, 0.01);
}

// gpu0: X of the plan in force, 20 % at 50 req/s (room 4), and a new Y,
// 20 % at 100 (room 2). Y grown to 80 % would triple X's latency (66 req/s:
// room 1.33): the plan stays as it is, with its own room.
TEST(ShareFillTest, AFillThatLowersTheRoomIsNotMade) {
  const Fixture f(50, 100, std::make_shared<LargeNeighbourInterference>());
  const Plan plan = testing::OneModelGpulets(
      {{"gpu0", 20.0, "x", 50.0}, {"gpu0", 20.0, "y", 100.0}});
  const Plan current = testing::OneModelGpulets({{"gpu0", 20.0, "x", 50.0}});
  Plan grown = plan;
  grown.mutable_devices(0)->mutable_gpulets(1)->set_share_percent(80);
  EXPECT_NEAR(f.check->ScaleMargin(grown, kMaxScale, kSteps), 4.0 / 3, 0.01);
  const ShareFill::Result r = f.Fill(plan, current);
  EXPECT_EQ(r.raised, 0);
  EXPECT_EQ(ShareOf(r.plan, "x"), 20);
  EXPECT_EQ(ShareOf(r.plan, "y"), 20);
  EXPECT_NEAR(r.margin, 2, 0.01);
}

}  // namespace
}  // namespace tessera
