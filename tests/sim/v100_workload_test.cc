#include "sim/v100_workload.h"

#include <memory>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(V100InterferenceTest, PicksTheSetupsModelByName) {
  V100Setup setup;
  setup.linear = std::make_shared<ConstantInterference>(1.1);
  setup.pairwise = std::make_shared<ConstantInterference>(1.2);
  EXPECT_EQ(V100Interference(setup, "linear")->get(), setup.linear.get());
  EXPECT_EQ(V100Interference(setup, "pairwise")->get(), setup.pairwise.get());
  auto none = V100Interference(setup, "none");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)->name(), "none");
  auto bad = V100Interference(setup, "Linear");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'Linear'"), absl::string_view::npos);
}

}  // namespace
}  // namespace tessera
