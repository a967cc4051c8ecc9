// ProfileFits: what the policies would derive from the profiles on every
// plan, made once; found only for the profile, batch limit and latency
// scale it was made for, and never changing a plan.
#include "scheduler/profile_fits.h"

#include <memory>

#include "gtest/gtest.h"
#include "scheduler/igniter_policy.h"
#include "scheduler/las_policy.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace {

using testing::AddModel;
using testing::LinearProfile;
using testing::Snapshot;

// Two models on two GPUs whose iGniter and LAS plans depend on the
// profiles' latencies.
ClusterSnapshot TwoModels(double fixed_ms = 3, double per_item_ms = 1) {
  ClusterSnapshot s = Snapshot(2);
  AddModel(&s, LinearProfile("a", fixed_ms, per_item_ms), 100, 50, 16);
  AddModel(&s, LinearProfile("b", 2 * fixed_ms, per_item_ms), 60, 80);
  return s;
}

PolicyOptions WithFitsOf(const ClusterSnapshot& s, PolicyOptions options) {
  options.fits = std::make_shared<const ProfileFits>(
      ProfileFits::Build(s.models, options.rules));
  return options;
}

TEST(ProfileFitsTest, FindsAFitOnlyForItsProfileBatchLimitAndScale) {
  PolicyOptions options;
  options.rules.mutable_igniter()->set_latency_headroom(1.25);
  options.rules.mutable_las()->set_latency_headroom(1.5);
  const ClusterSnapshot s = TwoModels();
  const ProfileFits fits = ProfileFits::Build(s.models, options.rules);
  EXPECT_EQ(fits.size(), 4);  // iGniter's and LAS's for each model
  const ModelProfile& a = s.models[0].profiles.at("test-gpu");
  const std::string key = ProfileFits::KeyOf(a);
  ASSERT_NE(fits.FindModel(key), nullptr);
  EXPECT_EQ(fits.FindModel(key)->max_batch(), 32);

  // Model a's batch limit is its config's 16, within the profile's 32.
  const ProfileFits::IgniterFit* ig = fits.FindIgniter(key, 16, 1.25);
  ASSERT_NE(ig, nullptr);
  auto lm = LatencyModel::FromProfile(a);
  ASSERT_TRUE(lm.ok());
  double err = -1;
  auto w = IgniterPolicy::FitWorkload(*lm, 1.25, 16, &err);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(ig->workload.k, w->k);
  EXPECT_EQ(ig->worst_fit_error, err);
  const LasCoefficients* las = fits.FindLas(key, 16, 1.5);
  ASSERT_NE(las, nullptr);
  auto c = LasPolicy::FitModel(*lm, 1.5, 16);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(las->delta, c->delta);
  EXPECT_EQ(las->omega, c->omega);

  // Another scale, batch limit or profile finds nothing.
  EXPECT_EQ(fits.FindIgniter(key, 16, 1.5), nullptr);
  EXPECT_EQ(fits.FindIgniter(key, 32, 1.25), nullptr);
  EXPECT_EQ(fits.FindLas(key, 16, 1.25), nullptr);
  ModelProfile changed = a;
  changed.mutable_latency(0)->set_latency_ms(a.latency(0).latency_ms() * 2);
  EXPECT_EQ(fits.FindModel(ProfileFits::KeyOf(changed)), nullptr);
  EXPECT_EQ(fits.FindIgniter(ProfileFits::KeyOf(changed), 16, 1.25), nullptr);
}

TEST(ProfileFitsTest, PoliciesPlanTheSameWithFits) {
  const ClusterSnapshot s = TwoModels();
  const PolicyOptions options = testing::PaperRules();
  for (const char* policy : {"igniter", "las", "sbp", "greedy"}) {
    auto without = testing::RunPolicyWith(policy, s, options);
    auto with = testing::RunPolicyWith(policy, s, WithFitsOf(s, options));
    ASSERT_TRUE(without.ok()) << policy << ": " << without.status();
    ASSERT_TRUE(with.ok()) << policy << ": " << with.status();
    EXPECT_EQ(with->DebugString(), without->DebugString()) << policy;
  }
}

TEST(ProfileFitsTest, FitsOfAnotherProfileAreNotUsed) {
  // Fits made for the profiles before they changed: a policy plans the
  // changed profiles as if it had none.
  const ClusterSnapshot before = TwoModels(3, 1);
  const ClusterSnapshot after = TwoModels(4.5, 1.5);
  const PolicyOptions options = testing::PaperRules();
  const PolicyOptions stale = WithFitsOf(before, options);
  for (const char* policy : {"igniter", "las"}) {
    auto old_plan = testing::RunPolicyWith(policy, before, options);
    auto fresh = testing::RunPolicyWith(policy, after, options);
    auto with_stale = testing::RunPolicyWith(policy, after, stale);
    ASSERT_TRUE(old_plan.ok()) << policy << ": " << old_plan.status();
    ASSERT_TRUE(fresh.ok()) << policy << ": " << fresh.status();
    ASSERT_TRUE(with_stale.ok()) << policy << ": " << with_stale.status();
    // The change matters to the plan ...
    EXPECT_NE(fresh->DebugString(), old_plan->DebugString()) << policy;
    // ... and the stale fits do not.
    EXPECT_EQ(with_stale->DebugString(), fresh->DebugString()) << policy;
  }
}

}  // namespace
}  // namespace tessera
