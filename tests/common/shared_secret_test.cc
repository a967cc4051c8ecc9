#include "common/shared_secret.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/shared_secret_" +
                           std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SharedSecretTest, ReadsTheFirstLineAndRefusesShortOrMissingTokens) {
  const std::string good = WriteFile("good", "  0123456789abcdef0123 \nrest\n");
  auto secret = SharedSecret::FromFile(good);
  ASSERT_TRUE(secret.ok()) << secret.status();
  const std::string bearer = "Bearer 0123456789abcdef0123";
  EXPECT_TRUE(secret->Check(&bearer).ok());
  EXPECT_EQ(
      SharedSecret::FromFile(WriteFile("short", "s3cret\n")).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SharedSecret::FromFile(good + ".absent").status().code(),
            absl::StatusCode::kNotFound);
  fs::remove(good);
}

TEST(SharedSecretTest, NoCredentialsAreUnauthenticatedAndWrongOnesDenied) {
  const SharedSecret secret("0123456789abcdef0123");
  EXPECT_EQ(secret.Check(nullptr).code(), absl::StatusCode::kUnauthenticated);
  for (const std::string wrong :
       {"Bearer 0123456789abcdef012", "Bearer 0123456789abcdef01234",
        "0123456789abcdef0123", "Bearer ", ""}) {
    EXPECT_EQ(secret.Check(&wrong).code(), absl::StatusCode::kPermissionDenied)
        << wrong;
  }
  // An empty secret accepts nothing.
  const std::string any = "Bearer ";
  EXPECT_EQ(SharedSecret().Check(&any).code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace tessera
