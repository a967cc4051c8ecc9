// GpuletStarter on in-memory proxies: what each proxy is told, the
// parallel start of a plan's gpulets and what a failed start leaves.
#include "backend/gpulet_starter.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/backend/fake_proxy.h"
#include "tests/common/temp_model_repository.h"

namespace tessera {
namespace {

using ::testing::ElementsAre;
using testing::FakeLauncher;
using ::testing::HasSubstr;
using testing::TempModelRepository;

class GpuletStarterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BackendConfig config;
    config.set_id("b0");
    DeviceConfig* cpu = config.add_devices();
    cpu->set_id("cpu0");
    cpu->set_kind(DEVICE_KIND_CPU);
    for (int c : {0, 1, 2, 3}) cpu->add_cpu_cores(c);
    auto node = BackendNode::Load(config, repo_.root());
    ASSERT_TRUE(node.ok()) << node.status();
    node_ = std::move(*node);
    GpuletStarter::Options options;
    options.proxy_binary = "/bin/proxy";
    options.proxy_slots = 3;
    options.launcher = launcher_;
    starter_ = std::make_unique<GpuletStarter>(options, node_.get(), &metrics_);
  }

  // Gpulets g0 (25 %, model m), g1 (25 %, n) and g2 (50 %, m) on cpu0,
  // resolved by the node (cores assigned).
  std::map<std::string, GpuletSpec> ThreeGpulets(
      GpuletScheduler scheduler = GPULET_SCHEDULER_BATCHES) {
    Plan plan;
    plan.set_epoch(1);
    DevicePlan* dp = plan.add_devices();
    dp->set_backend_id("b0");
    dp->set_device_id("cpu0");
    for (const auto& [id, share, model] :
         std::vector<std::tuple<std::string, double, std::string>>{
             {"g0", 25, "m"}, {"g1", 25, "n"}, {"g2", 50, "m"}}) {
      GpuletPlan* g = dp->add_gpulets();
      g->set_gpulet_id(id);
      g->set_share_percent(share);
      g->set_scheduler(scheduler);
      ModelAssignment* a = g->add_models();
      a->set_model(model);
      a->set_batch_size(4);
    }
    auto wanted = node_->Resolve(plan);
    EXPECT_TRUE(wanted.ok()) << wanted.status();
    return wanted.ok() ? *wanted : std::map<std::string, GpuletSpec>{};
  }

  TempModelRepository repo_{{"m", "n"}};
  std::shared_ptr<FakeLauncher> launcher_ = std::make_shared<FakeLauncher>();
  std::unique_ptr<BackendNode> node_;
  BackendMetrics metrics_;
  std::unique_ptr<GpuletStarter> starter_;
};

TEST_F(GpuletStarterTest, StartsEachGpuletWithItsOwnProxyConfig) {
  const auto wanted = ThreeGpulets();
  auto started = starter_->StartAll({"g0", "g2"}, wanted);
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(started->size(), 2u);
  EXPECT_EQ((*started)[0].id(), "g0");
  EXPECT_EQ((*started)[1].id(), "g2");
  ASSERT_EQ(launcher_->launched().size(), 2u);
  for (const auto& launched : launcher_->launched()) {
    EXPECT_EQ(launched.options.proxy_binary, "/bin/proxy");
    EXPECT_EQ(launched.options.num_slots, 3);
    const ProxyConfig& c = launched.options.config;
    EXPECT_EQ(c.model_repository(), repo_.root());
    EXPECT_EQ(c.device_kind(), DEVICE_KIND_CPU);
    ASSERT_EQ(c.models_size(), 1);
    EXPECT_EQ(c.models(0).name(), "m");
    EXPECT_EQ(c.threads(), c.cpu_cores_size());
  }
  EXPECT_THAT(launcher_->Last("g2")->config().cpu_cores(), ElementsAre(2, 3));
  EXPECT_EQ(launcher_->Last("g1"), nullptr);
}

TEST_F(GpuletStarterTest, AFailedStartStopsTheProxiesThatStarted) {
  const auto wanted = ThreeGpulets();
  launcher_->FailFor("g1");
  auto started = starter_->StartAll({"g0", "g1", "g2"}, wanted);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_NE(launcher_->Last("g0"), nullptr);
  EXPECT_TRUE(launcher_->Last("g0")->stopped());
  EXPECT_TRUE(launcher_->Last("g2")->stopped());
}

TEST_F(GpuletStarterTest, OperatorGroupsNeedAGroupPredictor) {
  const auto wanted = ThreeGpulets(GPULET_SCHEDULER_ABACUS);
  auto proxy = starter_->Start(wanted.at("g0"));
  ASSERT_FALSE(proxy.ok());
  EXPECT_EQ(proxy.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(proxy.status().message(), HasSubstr("--group_predictor"));
  EXPECT_TRUE(launcher_->launched().empty());
}

TEST_F(GpuletStarterTest, DrainAndStopStopsEveryGpulet) {
  const auto wanted = ThreeGpulets();
  auto started = starter_->StartAll({"g0", "g1", "g2"}, wanted);
  ASSERT_TRUE(started.ok()) << started.status();
  starter_->DrainAndStop(*started);
  for (const std::string id : {"g0", "g1", "g2"}) {
    EXPECT_TRUE(launcher_->Last(id)->stopped()) << id;
  }
}

}  // namespace
}  // namespace tessera
