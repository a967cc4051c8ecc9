#include "scheduler/inss_environment.h"

#include "gtest/gtest.h"
#include "tests/scheduler/inss_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using testing::InssInfo;
using testing::LinearProfile;
using testing::PaperRules;
using testing::Snapshot;

class InssEnvironmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    snapshot_ = Snapshot(2);
    snapshot_.devices[0].memory_bytes = 10;
    snapshot_.devices[1].memory_bytes = 10;
    for (const char* m : {"a", "b"}) {
      ModelProfile p = LinearProfile(m, 5, 5);
      p.set_memory_bytes(6);
      AddModel(&snapshot_, p, 1, 100);
    }
    auto c = InssCluster::FromSnapshot(snapshot_, PaperRules(),
                                       InssInfo({"a", "b"}, 2));
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::make_unique<InssCluster>(*c);
    options_.presence_probability = 1;
    options_.steps = 3;
  }
  ClusterSnapshot snapshot_;
  std::unique_ptr<InssCluster> cluster_;
  InssEnvironmentOptions options_;
};

TEST_F(InssEnvironmentTest, ResetIsDeterministicPerSeed) {
  InssEnvironment a(*cluster_, options_, 7), b(*cluster_, options_, 7);
  InssEnvironment c(*cluster_, options_, 8);
  const std::vector<float> sa = a.Reset();
  EXPECT_EQ(static_cast<int>(sa.size()), 6 * 2 + 2);
  EXPECT_EQ(sa, b.Reset());
  EXPECT_NE(sa, c.Reset());
  // Present, with a rate inside [0.1, 0.9] x its solo capacity.
  EXPECT_EQ(sa[0], 1.f);
  EXPECT_GT(sa[1], 0.f);
}

TEST_F(InssEnvironmentTest, SoloCapacityIsWhereBdaStopsFitting) {
  InssCluster c = *cluster_;
  c.mutable_slots()[0].slo_ms = 50;
  const double cap = InssEnvironment::SoloCapacityRps(c, 0);
  ASSERT_GT(cap, 0);
  const InssProvisioning alone{{0, -1}, {100, 0}};
  EXPECT_TRUE(InssBatching::Decide(c, alone, {0.99 * cap, 0}, {0, 0}, {}).ok);
  EXPECT_FALSE(InssBatching::Decide(c, alone, {1.01 * cap, 0}, {0, 0}, {}).ok);
}

TEST_F(InssEnvironmentTest, RewardIsCapacityMinusPenalisedViolations) {
  InssEnvironment env(*cluster_, options_, 3);
  env.Reset();
  // One model per device at any level: the whole device each, rates at
  // most 0.9 of solo capacity: no violation, reward = sum c_i / H_i.
  const InssEnvironment::Step good = env.Apply({0, 1, 4, 4});
  EXPECT_EQ(good.violation_fraction, 0);
  EXPECT_GT(good.capacity_sum, 0);
  EXPECT_DOUBLE_EQ(good.reward, good.capacity_sum);
  // The action asks for both on device 0; placement is balanced, so they
  // still get a device each.
  const InssEnvironment::Step both = env.Apply({0, 0, 4, 4});
  EXPECT_EQ(both.violation_fraction, 0);
  // One 10-byte device cannot hold both 6-byte models: nothing is served
  // and every task violates: reward = -100 per model.
  ClusterSnapshot one = snapshot_;
  one.devices.resize(1);
  auto c =
      InssCluster::FromSnapshot(one, PaperRules(), InssInfo({"a", "b"}, 1));
  ASSERT_TRUE(c.ok()) << c.status();
  InssEnvironment tight(*c, options_, 3);
  tight.Reset();
  const InssEnvironment::Step bad = tight.Apply({0, 0, 4, 4});
  EXPECT_DOUBLE_EQ(bad.violation_fraction, 1);
  EXPECT_DOUBLE_EQ(bad.reward, -200);
  EXPECT_FALSE(both.done);
  EXPECT_TRUE(env.Apply({0, 1, 4, 4}).done);
}

TEST_F(InssEnvironmentTest, StateCarriesTheCurrentProvisioning) {
  const InssProvisioning p{{1, 0}, {100, 100}};
  const std::vector<float> s =
      InssEnvironment::EncodeState(*cluster_, {10, 0}, {0, 0}, p);
  // Slot a: present, rate / H (H = 1000 / 10 ms), backlog, SLO / (10 x
  // 10 ms), share, (device + 1) / K; slot b absent: zeros; memory use.
  EXPECT_EQ(
      s, (std::vector<float>{1, 0.1f, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0.6f}));
}

}  // namespace
}  // namespace tessera
