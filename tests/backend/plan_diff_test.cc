#include "backend/plan_diff.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

GpuletSpec Spec(const std::string& id, const std::string& device, double share,
                std::vector<std::string> models, int64_t bytes = 0,
                std::vector<int> cores = {}) {
  GpuletSpec s;
  s.plan.set_gpulet_id(id);
  s.plan.set_share_percent(share);
  for (const std::string& m : models) {
    ModelAssignment* a = s.plan.add_models();
    a->set_model(m);
    a->set_batch_size(4);
  }
  s.device_id = device;
  s.cores = std::move(cores);
  s.memory_bytes = bytes;
  return s;
}

ResidentGpulet Serving(GpuletSpec spec, bool alive = true) {
  return {std::move(spec), GpuletState::kServing, alive};
}

std::map<std::string, GpuletSpec> ById(std::vector<GpuletSpec> specs) {
  std::map<std::string, GpuletSpec> m;
  for (GpuletSpec& s : specs) m[s.id()] = std::move(s);
  return m;
}

TEST(PlanDiffTest, KeepsSameProcessStartsChangedAndNewGpulets) {
  std::vector<ResidentGpulet> now = {
      Serving(Spec("same", "d0", 50, {"m"})),
      Serving(Spec("share", "d0", 30, {"m"})),
      Serving(Spec("models", "d1", 50, {"m"})),
      Serving(Spec("cores", "cpu", 50, {"m"}, 0, {0})),
      Serving(Spec("dead", "d1", 50, {"n"}), /*alive=*/false),
      Serving(Spec("dropped", "d1", 50, {"n"})),
  };
  GpuletSpec same = Spec("same", "d0", 50, {"m"});
  same.plan.mutable_models(0)->set_batch_size(16);  // batches change freely
  auto wanted =
      ById({same, Spec("share", "d0", 40, {"m"}),
            Spec("models", "d1", 50, {"m", "n"}),
            Spec("cores", "cpu", 50, {"m"}, 0, {1}),
            Spec("dead", "d1", 50, {"n"}), Spec("new", "d2", 100, {"m"})});
  PlanDiff diff = DiffPlan(now, wanted, {});
  EXPECT_THAT(diff.keep, ElementsAre("same"));
  EXPECT_THAT(diff.start,
              UnorderedElementsAre("share", "models", "cores", "dead", "new"));
  EXPECT_THAT(diff.stop_first_devices, IsEmpty());
  EXPECT_EQ(diff.stop_then_start, 0);
}

// A gpulet that lost models (an unload) keeps its proxy, which drops them;
// one that lost every model, changed share or gained one does not.
TEST(PlanDiffTest, AGpuletLessSomeModelsDropsThemInPlace) {
  std::vector<ResidentGpulet> now = {
      Serving(Spec("shrunk", "d0", 50, {"a", "b", "c"})),
      Serving(Spec("resized", "d0", 50, {"a", "b"})),
      Serving(Spec("swapped", "d1", 50, {"a", "b"})),
      Serving(Spec("dead", "d1", 50, {"a", "b"}), /*alive=*/false),
  };
  auto wanted = ById(
      {Spec("shrunk", "d0", 50, {"b"}), Spec("resized", "d0", 40, {"a"}),
       Spec("swapped", "d1", 50, {"a", "c"}), Spec("dead", "d1", 50, {"a"})});
  PlanDiff diff = DiffPlan(now, wanted, {});
  EXPECT_THAT(diff.keep, ElementsAre("shrunk"));
  ASSERT_EQ(diff.drop.count("shrunk"), 1u);
  EXPECT_THAT(diff.drop.at("shrunk"), ElementsAre("a", "c"));
  EXPECT_THAT(diff.start, UnorderedElementsAre("resized", "swapped", "dead"));
}

TEST(PlanDiffTest, AnotherSchedulerIsAnotherProcess) {
  std::vector<ResidentGpulet> now = {Serving(Spec("g", "d0", 100, {"m"}))};
  GpuletSpec groups = Spec("g", "d0", 100, {"m"});
  groups.plan.set_scheduler(GPULET_SCHEDULER_ABACUS);
  PlanDiff diff = DiffPlan(now, ById({groups}), {});
  EXPECT_THAT(diff.keep, IsEmpty());
  EXPECT_THAT(diff.start, ElementsAre("g"));
}

TEST(PlanDiffTest, ReplacedProxiesAreNeverKept) {
  std::vector<ResidentGpulet> now = {
      {Spec("a", "d0", 50, {"m"}), GpuletState::kReplaced, true}};
  PlanDiff diff = DiffPlan(now, ById({Spec("a", "d0", 50, {"m"})}), {});
  EXPECT_THAT(diff.keep, IsEmpty());
  EXPECT_THAT(diff.start, ElementsAre("a"));
}

TEST(PlanDiffTest, StopsFirstWhereOldAndNewProxiesOverflowTheMemory) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  // d0: 2 GiB resident + 2 GiB of shadows > 3 GiB. d1: 1 + 1 <= 3.
  std::vector<ResidentGpulet> now = {
      Serving(Spec("a", "d0", 50, {"m"}, kGiB)),
      Serving(Spec("b", "d0", 50, {"n"}, kGiB)),
      Serving(Spec("c", "d1", 50, {"m"}, kGiB)),
  };
  auto wanted =
      ById({Spec("a", "d0", 60, {"m"}, kGiB), Spec("b", "d0", 40, {"n"}, kGiB),
            Spec("c", "d1", 60, {"m"}, kGiB)});
  PlanDiff diff = DiffPlan(now, wanted, {{"d0", 3 * kGiB}, {"d1", 3 * kGiB}});
  EXPECT_THAT(diff.stop_first_devices, ElementsAre("d0"));
  EXPECT_EQ(diff.stop_then_start, 2);
  EXPECT_EQ(diff.start.size(), 3u);
  // Unlimited memory (absent or 0): never stop first.
  diff = DiffPlan(now, wanted, {{"d0", 0}});
  EXPECT_THAT(diff.stop_first_devices, IsEmpty());
}

TEST(CheckGpuletsPerDeviceTest, RefusesMoreProxiesThanTheBoundOnOneDevice) {
  const auto two_on_d0 =
      ById({Spec("a", "d0", 50, {"m"}), Spec("b", "d0", 50, {"m"}),
            Spec("c", "d1", 50, {"m"})});
  EXPECT_TRUE(CheckGpuletsPerDevice(two_on_d0, 2).ok());
  const absl::Status s = CheckGpuletsPerDevice(two_on_d0, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("device 'd0'"), std::string::npos) << s;
}

}  // namespace
}  // namespace tessera
