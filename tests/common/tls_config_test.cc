#include "common/tls_config.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/tls_config_" +
                           std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TlsConfigTest, RefusesACertificateWithoutItsKeyAndNonPemFiles) {
  EXPECT_EQ(TlsConfig::Load({"cert.pem", "", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TlsConfig::Load({"", "key.pem", ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string not_pem = WriteFile("not_pem", "hello\n");
  EXPECT_EQ(TlsConfig::Load({"", "", not_pem}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TlsConfig::Load({"", "", not_pem + ".absent"}).status().code(),
            absl::StatusCode::kNotFound);
  auto plaintext = TlsConfig::Load({});
  ASSERT_TRUE(plaintext.ok());
  EXPECT_FALSE(plaintext->serves_tls());
  EXPECT_FALSE(plaintext->verifies_peers());
  fs::remove(not_pem);
}

}  // namespace
}  // namespace tessera
