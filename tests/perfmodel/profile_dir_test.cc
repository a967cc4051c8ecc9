#include "perfmodel/profile_dir.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace tessera {
namespace {

class ProfileDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/profile_dir_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (const char* model : {"a", "b"}) {
      std::ofstream(dir_ + "/" + model + ".pbtxt")
          << "model: \"" << model << "\" device_kind: \"cuda\"\n"
          << "latency { batch_size: 1 share_percent: 50 latency_ms: 2 }\n"
          << "latency { batch_size: 1 share_percent: 100 latency_ms: 1 }\n";
    }
    std::ofstream(dir_ + "/interference.pbtxt")
        << "device_kind: \"cuda\" linear_coefficients: 1\n";
  }
  void WritePairs(const std::string& rows) {
    std::ofstream(dir_ + "/pairs.csv")
        << "model,batch,share,other,other_batch,other_share,latency_ms,"
           "other_latency_ms\n"
        << rows;
  }
  std::string dir_;
};

TEST_F(ProfileDirTest, ReadsProfilesAndOneSamplePerPairRow) {
  WritePairs("a,1,50,b,1,50,2.5,2.2\nb,1,50,a,1,50,2.2,2.5\n");
  auto loaded = ProfileDir::Load(dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->profiles().size(), 2u);  // interference.pbtxt skipped
  ASSERT_EQ((*loaded)->pairs().size(), 2u);
  const CoLocationSample& first = (*loaded)->pairs()[0];
  EXPECT_EQ(first.self.model->LatencyMs(1, 50), 2);
  EXPECT_EQ(first.other.model->LatencyMs(1, 100), 1);
  EXPECT_EQ(first.self.share_percent, 50);
  EXPECT_EQ(first.latency_ms, 2.5);
  EXPECT_EQ((*loaded)->pairs()[1].latency_ms, 2.2);
}

TEST_F(ProfileDirTest, NoPairsFileMeansNoSamples) {
  auto loaded = ProfileDir::Load(dir_);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->pairs().empty());
}

TEST_F(ProfileDirTest, APairOfAnUnprofiledModelIsAnErrorNamingTheLine) {
  WritePairs("a,1,50,b,1,50,2.5,2.2\na,1,50,c,1,50,2.5,2.2\n");
  auto loaded = ProfileDir::Load(dir_);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("pairs.csv:3"), std::string::npos)
      << loaded.status();
}

TEST_F(ProfileDirTest, AMalformedRowIsAnError) {
  WritePairs("a,1,50,b,1,fifty,2.5,2.2\n");
  EXPECT_EQ(ProfileDir::Load(dir_).status().code(),
            absl::StatusCode::kInvalidArgument);
  WritePairs("a,1,50,b,1,50,2.5\n");
  EXPECT_EQ(ProfileDir::Load(dir_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ProfileDirEmptyTest, AFolderWithNoProfilesIsAnError) {
  const std::string dir = ::testing::TempDir() + "/profile_dir_empty";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(ProfileDir::Load(dir).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ProfileDir::Load(dir + "/missing").ok());
}

}  // namespace
}  // namespace tessera
