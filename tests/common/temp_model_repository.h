#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace testing {

// A model repository in a fresh directory under the test's temporary
// directory, removed when it goes: each model a TorchScript config with one
// FP32 input [-1, 3] and one output [-1, 2], and a placeholder model.pt,
// for tests that load a repository but run no model.
class TempModelRepository {
 public:
  explicit TempModelRepository(const std::vector<std::string>& models) {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = std::filesystem::path(::testing::TempDir()) /
            ("repo_" + std::to_string(::getpid()) + "_" +
             (test != nullptr ? test->name() : "none"));
    std::filesystem::remove_all(root_);
    for (const std::string& name : models) {
      std::filesystem::create_directories(root_ / name / "1");
      std::ofstream(root_ / name / "config.pbtxt")
          << "name: \"" << name << "\"\n"
          << R"pb(max_batch_size: 8
                  slo_ms: 100
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
      std::ofstream(root_ / name / "1" / "model.pt") << "x";
    }
  }
  ~TempModelRepository() { std::filesystem::remove_all(root_); }
  TempModelRepository(const TempModelRepository&) = delete;
  TempModelRepository& operator=(const TempModelRepository&) = delete;

  std::string root() const { return root_.string(); }

 private:
  std::filesystem::path root_;
};

}  // namespace testing
}  // namespace tessera
