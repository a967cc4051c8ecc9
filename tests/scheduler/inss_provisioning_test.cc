#include "scheduler/inss_provisioning.h"

#include "gtest/gtest.h"
#include "tests/scheduler/inss_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using testing::InssInfo;
using testing::LinearProfile;
using testing::PaperRules;
using testing::Snapshot;

// Four models a..d on `gpus` devices; `memory_mb` per model and
// `device_mb` per device (0: unlimited).
InssCluster Make(ClusterSnapshot* s, int gpus, double unit_percent,
                 int64_t memory_mb = 0, int64_t device_mb = 0) {
  *s = Snapshot(gpus);
  for (DeviceSnapshot& d : s->devices) d.memory_bytes = device_mb << 20;
  for (const char* m : {"a", "b", "c", "d"}) {
    ModelProfile p = LinearProfile(m, 5, 5);
    p.set_memory_bytes(memory_mb << 20);
    AddModel(s, p, 10, 100);
  }
  auto c = InssCluster::FromSnapshot(
      *s, PaperRules(), InssInfo({"a", "b", "c", "d"}, gpus, unit_percent));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(InssProvisioningTest, AFeasibleActionIsKeptAsChosen) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 3, 10);
  // a and b share gpu 0 with 3 + 5 <= 10 units; c has gpu 2 at 4 units;
  // gpu 1 stays empty and nothing is scaled up: the actor's choice.
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 2, 1}, {3, 5, 4, 7}, {true, true, true, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 0, 2, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{30, 50, 40, 0}));
}

TEST(InssProvisioningTest, AFlatActionIsDevicesThenZeroBasedLevels) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 3, 10);
  // The same choice as above in the environment's encoding: levels are
  // 0-based (2 means 3 units) and d, with no traffic, is not placed
  // whatever its heads say.
  const InssProvisioning p = InssProvisioning::FromFlatAction(
      c, {0, 0, 2, 1, 2, 4, 3, 6}, {10, 10, 10, 0});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 0, 2, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{30, 50, 40, 0}));
}

TEST(InssProvisioningTest, AnOversubscribedDeviceIsScaledInProportion) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 2, 10);
  // gpu 0: levels 9 and 3 sum to 12 > 10 units: one unit each, then the 8
  // spare split 6 : 2 -> 7 and 3 units. gpu 1 (c at 6) is feasible and
  // kept: the smallest change touches only the broken device.
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 1, 0}, {9, 3, 6, 1}, {true, true, true, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 0, 1, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{70, 30, 60, 0}));
}

TEST(InssProvisioningTest, LargestRemaindersGetTheLeftoverUnits) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 1, 10);
  // Levels 4, 4, 4 sum to 12: 7 spare units split 7/3 each = 2 + 1/3;
  // the first (ties by slot order) gets the leftover: 4, 3, 3 units.
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 0, 0}, {4, 4, 4, 4}, {true, true, true, false});
  EXPECT_EQ(p.share_percent, (std::vector<double>{40, 30, 30, 0}));
}

TEST(InssProvisioningTest, MovesModelsADeviceHasNoUnitsFor) {
  ClusterSnapshot s;
  // 50 % units: a device holds at most two models. Three on gpu 0: the
  // one with the lowest level (c) moves to the emptier gpu 1, where it
  // keeps its level.
  const InssCluster c = Make(&s, 2, 50);
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 0, 1}, {1, 1, 1, 1}, {true, true, true, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 0, 1, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{50, 50, 50, 0}));
}

TEST(InssProvisioningTest, MemoryMovesTheLowestLevelModelWhereItFits) {
  ClusterSnapshot s;
  // 6 GB models on 16 GB devices: two fit on one, three do not.
  const InssCluster c = Make(&s, 3, 10, 6 << 10, 16 << 10);
  // a, b, c on gpu 0 (levels 5, 2, 3), d on gpu 1: b (level 2) moves to
  // the device with the most free memory, the empty gpu 2; a and c keep
  // their levels (5 + 3 <= 10).
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 0, 1}, {5, 2, 3, 10}, {true, true, true, true});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 2, 0, 1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{50, 20, 30, 100}));
}

TEST(InssProvisioningTest, AModelThatFitsNowhereStaysForBdaToRefuse) {
  ClusterSnapshot s;
  // 10 GB models on 16 GB devices, one device: a and b cannot both fit
  // and there is no other device; both stay, scaled to the units.
  const InssCluster c = Make(&s, 1, 10, 10 << 10, 16 << 10);
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 0, 0}, {10, 10, 1, 1}, {true, true, false, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 0, -1, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{50, 50, 0, 0}));
}

TEST(InssProvisioningTest, OutOfRangeChoicesAreClamped) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 2, 10);
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {7, -3, 0, 0}, {99, 0, 1, 1}, {true, true, false, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{1, 0, -1, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{100, 10, 0, 0}));
}

TEST(InssProvisioningTest, TwoFeasibleActionsGiveTwoProvisionings) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 4, 10);
  // n <= K: the actor may still co-locate; the repair keeps both choices.
  const InssProvisioning spread = InssProvisioning::FromAction(
      c, {0, 1, 2, 3}, {10, 10, 10, 10}, {true, true, true, true});
  const InssProvisioning packed = InssProvisioning::FromAction(
      c, {0, 0, 1, 1}, {6, 4, 5, 5}, {true, true, true, true});
  EXPECT_EQ(spread.gpu, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(packed.gpu, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(packed.share_percent, (std::vector<double>{60, 40, 50, 50}));
}

}  // namespace
}  // namespace tessera
