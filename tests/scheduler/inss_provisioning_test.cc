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

InssCluster Make(ClusterSnapshot* s, int gpus, double unit_percent) {
  *s = Snapshot(gpus);
  for (const char* m : {"a", "b", "c", "d"}) {
    AddModel(s, LinearProfile(m, 5, 5), 10, 100);
  }
  auto c = InssCluster::FromSnapshot(
      *s, PaperRules(), InssInfo({"a", "b", "c", "d"}, gpus, unit_percent));
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

TEST(InssProvisioningTest, HandsOutEachDeviceInProportionToTheLevels) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 2, 10);
  // a (level 3) and b (level 1) share gpu 0: one unit each, then the 8
  // spare units split 6 : 2 -> 70 % and 30 %. c alone on gpu 1 gets all
  // of it whatever its level. d has no traffic: not placed.
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 1, 1}, {3, 1, 2, 7}, {true, true, true, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 0, 1, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{70, 30, 100, 0}));
}

TEST(InssProvisioningTest, LargestRemaindersGetTheLeftoverUnits) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 1, 10);
  // Levels 1, 1, 1: 7 spare units split 7/3 each = 2 + 1/3; the first
  // (ties by slot order) gets the leftover: 4, 3, 3 units.
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 0, 0}, {1, 1, 1, 1}, {true, true, true, false});
  EXPECT_EQ(p.share_percent, (std::vector<double>{40, 30, 30, 0}));
}

TEST(InssProvisioningTest, MovesModelsADeviceHasNoUnitsFor) {
  ClusterSnapshot s;
  // 50 % units: a device holds at most two models. Three on gpu 0: the
  // one with the lowest level (c) moves to the emptier gpu 1.
  const InssCluster c = Make(&s, 2, 50);
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 0, 1}, {2, 2, 1, 1}, {true, true, true, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 0, 1, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{50, 50, 100, 0}));
}

TEST(InssProvisioningTest, BalancesModelsOverDevices) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 2, 10);
  // All four ask for gpu 0; at most ceil(4 / 2) = 2 stay: the two with the
  // highest levels (a, c). b moves to the then emptiest device (gpu 1),
  // then d (levels: b 2, d 1; the lowest level moves first: d, then b).
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 0, 0}, {5, 2, 4, 1}, {true, true, true, true});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 1, 0, 1}));
  // gpu 0: a 5 and c 4 share 8 spare units 40/9 + 32/9 -> 4 + 3, one
  // leftover to a (remainder 4/9 vs 5/9: c's is larger) -> c.
  EXPECT_EQ(p.share_percent[0] + p.share_percent[2], 100);
}

TEST(InssProvisioningTest, NoDeviceIdlesWhileAnotherIsShared) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 2, 10);
  // a and b ask for gpu 0 and gpu 1 stays empty: b (the lower level) moves.
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {0, 0, 0, 0}, {5, 2, 1, 1}, {true, true, false, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{0, 1, -1, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{100, 100, 0, 0}));
}

TEST(InssProvisioningTest, OutOfRangeChoicesAreClamped) {
  ClusterSnapshot s;
  const InssCluster c = Make(&s, 2, 10);
  const InssProvisioning p = InssProvisioning::FromAction(
      c, {7, -3, 0, 0}, {99, 0, 1, 1}, {true, true, false, false});
  EXPECT_EQ(p.gpu, (std::vector<int>{1, 0, -1, -1}));
  EXPECT_EQ(p.share_percent, (std::vector<double>{100, 100, 0, 0}));
}

}  // namespace
}  // namespace tessera
