#include "common/model_repository.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ModelRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ("repo_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void AddModel(const std::string& name, const std::string& config,
                std::vector<int> versions) {
    fs::create_directories(root_ / name);
    std::ofstream(root_ / name / "config.pbtxt") << config;
    for (int v : versions) {
      fs::create_directories(root_ / name / std::to_string(v));
      std::ofstream(root_ / name / std::to_string(v) / "model.pt") << "x";
    }
  }

  fs::path root_;
};

constexpr char kValid[] = R"pb(
  name: "m"
  max_batch_size: 4
  slo_ms: 10
  input {
    name: "x"
    data_type: TYPE_FP32
    dims: [ -1, 3 ]
  }
  output {
    name: "y"
    data_type: TYPE_FP32
    dims: [ -1, 2 ]
  })pb";

TEST_F(ModelRepositoryTest, LoadsValidModelsAndVersions) {
  AddModel("m", kValid, {1, 3});
  auto repo = ModelRepository::Load(root_.string());
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_THAT((*repo)->ModelNames(), ::testing::ElementsAre("m"));
  EXPECT_EQ((*repo)->Find("m")->config.platform(), "torchscript");
  EXPECT_EQ(*(*repo)->ResolveVersion("m", ""), 3);
  EXPECT_EQ(*(*repo)->ResolveVersion("m", "1"), 1);
  auto missing = (*repo)->ResolveVersion("m", "2");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("versions: 1, 3"));
  EXPECT_EQ((*repo)->ResolveVersion("nope", "").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ModelRepositoryTest, VersionsAreCanonicalNumbers) {
  AddModel("m", kValid, {1, 3});
  auto repo = ModelRepository::Load(root_.string());
  ASSERT_TRUE(repo.ok()) << repo.status();
  for (const char* odd : {"01", " 1", "+1", "1 ", "-1", "1e0", "0x1"}) {
    auto v = (*repo)->ResolveVersion("m", odd);
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << odd;
    EXPECT_THAT(v.status().message(), HasSubstr("not a version number"));
  }
  EXPECT_EQ(ModelRepository::ParseVersion("0"), 0);
  EXPECT_EQ(ModelRepository::ParseVersion("120"), 120);
  EXPECT_FALSE(ModelRepository::ParseVersion("").has_value());
  EXPECT_FALSE(
      ModelRepository::ParseVersion("1234567890123456789").has_value());
}

TEST_F(ModelRepositoryTest, ClientStringsInErrorsAreCutAndEscaped) {
  AddModel("m", kValid, {1});
  auto repo = ModelRepository::Load(root_.string());
  ASSERT_TRUE(repo.ok()) << repo.status();
  const std::string huge(8192, 'x');
  auto unknown = (*repo)->ResolveVersion(huge, "");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_LT(unknown.status().message().size(), 200u);
  EXPECT_THAT(unknown.status().message(), HasSubstr("(8192 bytes)"));
  auto odd = (*repo)->ResolveVersion("m", std::string("1\n\x01", 3));
  EXPECT_THAT(odd.status().message(), HasSubstr("1\\n\\x01"));
}

TEST_F(ModelRepositoryTest, ServingLoadsSkipAnInvalidEntryAndKeepTheOthers) {
  std::string good = kValid;
  good.replace(good.find("\"m\""), 3, "\"good\"");
  AddModel("good", good, {1});
  AddModel("bad", "name: \"bad\" platform: \"onnx\"", {1});
  EXPECT_FALSE(ModelRepository::Load(root_.string()).ok());
  auto repo = ModelRepository::Load(root_.string(),
                                    ModelRepository::InvalidEntries::kSkip);
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_THAT((*repo)->ModelNames(), ::testing::ElementsAre("good"));
  EXPECT_EQ(*(*repo)->ResolveVersion("good", ""), 1);
  ASSERT_EQ((*repo)->invalid().count("bad"), 1u);
  EXPECT_THAT((*repo)->invalid().at("bad").message(), HasSubstr("onnx"));
  auto bad = (*repo)->ResolveVersion("bad", "");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(bad.status().message(), HasSubstr("invalid config"));
}

// A model folder that is a symlink to a folder outside the repository is
// refused (a planted link must not make the server load foreign files); a
// link to a version folder elsewhere (how test repositories share model
// files) is the operator's own choice and stays allowed.
TEST_F(ModelRepositoryTest, ModelFoldersResolvingOutsideAreRefused) {
  const fs::path outside = root_.string() + "_outside";
  fs::remove_all(outside);
  fs::create_directories(outside / "m" / "1");
  std::ofstream(outside / "m" / "config.pbtxt") << kValid;
  std::ofstream(outside / "m" / "1" / "model.pt") << "x";
  fs::create_directory_symlink(outside / "m", root_ / "m");
  EXPECT_EQ(ModelRepository::Load(root_.string()).status().code(),
            absl::StatusCode::kPermissionDenied);
  auto repo = ModelRepository::Load(root_.string(),
                                    ModelRepository::InvalidEntries::kSkip);
  ASSERT_TRUE(repo.ok()) << repo.status();
  EXPECT_TRUE((*repo)->ModelNames().empty());
  ASSERT_EQ((*repo)->invalid().count("m"), 1u);
  EXPECT_THAT((*repo)->invalid().at("m").message(),
              HasSubstr("outside the repository"));

  fs::remove(root_ / "m");
  fs::create_directories(root_ / "m");
  std::ofstream(root_ / "m" / "config.pbtxt") << kValid;
  fs::create_directory_symlink(outside / "m" / "1", root_ / "m" / "1");
  auto linked = ModelRepository::Load(root_.string());
  ASSERT_TRUE(linked.ok()) << linked.status();
  EXPECT_EQ(*(*linked)->ResolveVersion("m", ""), 1);
  fs::remove_all(outside);
}

TEST_F(ModelRepositoryTest, RejectsInvalidConfigsNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"pb(name: "m"
            max_batch_size: 0
            slo_ms: 1
            input {
              name: "x"
              data_type: TYPE_FP32
              dims: [ -1 ]
            }
            output {
              name: "y"
              data_type: TYPE_FP32
              dims: [ -1 ]
            })pb",
       "max_batch_size"},
      {R"pb(name: "m"
            max_batch_size: 1
            slo_ms: 1
            input {
              name: "x"
              data_type: TYPE_FP32
              dims: [ 3 ]
            }
            output {
              name: "y"
              data_type: TYPE_FP32
              dims: [ -1 ]
            })pb",
       "batch dimension"},
      {R"pb(name: "m"
            max_batch_size: 1
            slo_ms: 0
            input {
              name: "x"
              data_type: TYPE_FP32
              dims: [ -1 ]
            }
            output {
              name: "y"
              data_type: TYPE_FP32
              dims: [ -1 ]
            })pb",
       "slo_ms"},
      {R"pb(name: "other"
            max_batch_size: 1
            slo_ms: 1
            input {
              name: "x"
              data_type: TYPE_FP32
              dims: [ -1 ]
            }
            output {
              name: "y"
              data_type: TYPE_FP32
              dims: [ -1 ]
            })pb",
       "differs from its directory"},
      {R"pb(name: "m"
            max_batch_size: 1
            slo_ms: 1
            segment_count: -1
            input {
              name: "x"
              data_type: TYPE_FP32
              dims: [ -1 ]
            }
            output {
              name: "y"
              data_type: TYPE_FP32
              dims: [ -1 ]
            })pb",
       "segment_count"},
      {R"pb(name: "m"
            max_batch_size: 1
            slo_ms: 1
            input {
              name: "x"
              data_type: TYPE_FP32
              dims: [ -1 ]
              value_range { min: 0 max: 1 }
            }
            output {
              name: "y"
              data_type: TYPE_FP32
              dims: [ -1 ]
            })pb",
       "value_range applies to integer inputs only"},
      {R"pb(name: "m"
            max_batch_size: 1
            slo_ms: 1
            input {
              name: "x"
              data_type: TYPE_INT32
              dims: [ -1 ]
              value_range { min: 5 max: 1 }
            }
            output {
              name: "y"
              data_type: TYPE_FP32
              dims: [ -1 ]
            })pb",
       "min 5 is above max 1"},
      {"name: \"m\" bogus_field: 1", "bogus_field"},
  };
  for (const auto& [config, message] : cases) {
    fs::remove_all(root_ / "m");
    AddModel("m", config, {1});
    auto repo = ModelRepository::Load(root_.string());
    EXPECT_FALSE(repo.ok()) << message;
    EXPECT_THAT(repo.status().message(), HasSubstr(message));
  }
}

TEST_F(ModelRepositoryTest, MissingRootIsNotFound) {
  EXPECT_EQ(ModelRepository::Load((root_ / "nope").string()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ModelRepositoryTest, EmulatedModelNeedsNoFileAndScalesSlo) {
  AddModel("m", std::string("platform: \"emulated\"\n") + kValid, {});
  auto repo = ModelRepository::Load(root_.string());
  ASSERT_TRUE(repo.ok()) << repo.status();
  auto version = (*repo)->ResolveVersion("m", "");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, 1);
  (*repo)->ScaleSlos(10);
  EXPECT_DOUBLE_EQ((*repo)->Find("m")->config.slo_ms(), 10 * 10);
}

TEST_F(ModelRepositoryTest, UnknownPlatformIsRejected) {
  AddModel("m", std::string("platform: \"onnx\"\n") + kValid, {1});
  auto repo = ModelRepository::Load(root_.string());
  ASSERT_FALSE(repo.ok());
  EXPECT_THAT(repo.status().message(), HasSubstr("torchscript, emulated"));
}

}  // namespace
}  // namespace tessera
