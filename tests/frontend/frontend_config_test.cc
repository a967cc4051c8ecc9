#include "frontend/frontend_config.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

FrontendConfig OneBackend() {
  FrontendConfig c;
  BackendEndpoint* b = c.add_backends();
  b->set_id("b0");
  b->set_address("127.0.0.1:1");
  return c;
}

TEST(FrontendConfigTest, FillsTheDocumentedDefaults) {
  FrontendConfig c = OneBackend();
  ASSERT_TRUE(ValidateFrontendConfig(&c).ok());
  EXPECT_EQ(c.policy(), "static");
  // With profiles and no static plan: Tessera's own policy.
  FrontendConfig profiled = OneBackend();
  profiled.set_profile_dir("profiles");
  ASSERT_TRUE(ValidateFrontendConfig(&profiled).ok());
  EXPECT_EQ(profiled.policy(), "tessera");
  profiled.mutable_static_plan()->add_devices()->set_backend_id("b0");
  profiled.clear_policy();
  ASSERT_TRUE(ValidateFrontendConfig(&profiled).ok());
  EXPECT_EQ(profiled.policy(), "static");
  EXPECT_EQ(c.time_scale(), 1);
  EXPECT_EQ(c.replan_period_s(), 20);
  EXPECT_EQ(c.rate_window_s(), 20);
  EXPECT_EQ(c.replan_threshold(), 0.25);
  EXPECT_EQ(c.min_rate_rps(), 1);
  EXPECT_EQ(c.heartbeat_interval_s(), 1);
  EXPECT_EQ(c.heartbeat_misses(), 3);
  EXPECT_EQ(c.drain_timeout_s(), 30);
}

TEST(FrontendConfigTest, RejectsWhatItCannotRun) {
  FrontendConfig none;
  EXPECT_THAT(ValidateFrontendConfig(&none).message(),
              HasSubstr("no backends"));
  FrontendConfig nameless = OneBackend();
  nameless.mutable_backends(0)->clear_id();
  EXPECT_THAT(ValidateFrontendConfig(&nameless).message(),
              HasSubstr("id and an address"));
  FrontendConfig negative = OneBackend();
  negative.set_replan_period_s(-1);
  EXPECT_EQ(ValidateFrontendConfig(&negative).code(),
            absl::StatusCode::kInvalidArgument);
  // The rise window: off, or within [rate_window_s / 10, rate_window_s).
  for (double rise : {0.5, 20.0, -1.0}) {
    FrontendConfig c = OneBackend();
    c.set_rise_window_s(rise);
    EXPECT_THAT(ValidateFrontendConfig(&c).message(),
                HasSubstr("rise_window_s"))
        << rise;
  }
  FrontendConfig rises = OneBackend();
  rises.set_rise_window_s(2);
  EXPECT_TRUE(ValidateFrontendConfig(&rises).ok());
}

TEST(FrontendConfigTest, InterferenceProfileMustBeTheLinearForm) {
  const std::string path = ::testing::TempDir() + "/interference_" +
                           std::to_string(::getpid()) + ".pbtxt";
  std::ofstream(path) << "linear_coefficients: [ 1, 2 ]";
  FrontendConfig c = OneBackend();
  c.set_interference_profile(path);
  auto options = PolicyOptionsFromConfig(c);
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(options.status().message(), HasSubstr(path));

  std::ofstream(path) << "linear_coefficients: [ 1, 0.1, 0.1, 0.1, 0.1 ]";
  options = PolicyOptionsFromConfig(c);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_NE(options->interference, nullptr);
  std::filesystem::remove(path);

  c.clear_interference_profile();
  options = PolicyOptionsFromConfig(c);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->interference, nullptr);
}

TEST(FrontendConfigTest, InssActorIsLoadedOnceWithTheConfig) {
  FrontendConfig c = OneBackend();
  // The shipped actor, for a live switch to "inss" later.
  auto options = PolicyOptionsFromConfig(c);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_NE(options->inss_actor, nullptr);
  // A checkpoint the config names must load, whatever the policy.
  c.set_inss_checkpoint_path(::testing::TempDir() + "/no_such_checkpoint");
  options = PolicyOptionsFromConfig(c);
  EXPECT_EQ(options.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(options.status().message(), HasSubstr("no_such_checkpoint"));
}

// A repository with "a" and "b" valid and "broken" invalid (no slo_ms).
TEST(FrontendConfigTest, StaticPlanNamesKnownModelsAndServesAllUnderStatic) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) /
                        ("static_repo_" + std::to_string(::getpid()));
  fs::remove_all(root);
  for (const std::string name : {"a", "b", "broken"}) {
    fs::create_directories(root / name / "1");
    std::ofstream(root / name / "1" / "model.pt") << "x";
    std::ofstream(root / name / "config.pbtxt")
        << "name: \"" << name << "\" max_batch_size: 4 "
        << (name == "broken" ? "" : "slo_ms: 10 ")
        << "input { name: \"x\" data_type: TYPE_FP32 dims: [ -1, 3 ] } "
           "output { name: \"y\" data_type: TYPE_FP32 dims: [ -1, 2 ] }";
  }
  auto repo = ModelRepository::Load(root.string(),
                                    ModelRepository::InvalidEntries::kSkip);
  ASSERT_TRUE(repo.ok()) << repo.status();
  ASSERT_EQ((*repo)->ModelNames().size(), 2u);

  PolicyOptions options;
  GpuletPlan* g = options.static_plan.add_devices()->add_gpulets();
  g->add_models()->set_model("a");
  g->add_models()->set_model("broken");  // known, though it cannot load
  EXPECT_TRUE(CheckStaticPlan("gpulet", options, **repo).ok());
  // Under the static policy nothing else serves b.
  absl::Status unserved = CheckStaticPlan("static", options, **repo);
  EXPECT_EQ(unserved.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unserved.message(), HasSubstr("b"));
  g->add_models()->set_model("b");
  EXPECT_TRUE(CheckStaticPlan("static", options, **repo).ok());
  g->add_models()->set_model("nowhere");
  absl::Status unknown = CheckStaticPlan("gpulet", options, **repo);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.message(), HasSubstr("nowhere"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace tessera
