#include "common/progress_bar.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(ProgressBarTest, FillsInProportionToWhatIsDone) {
  EXPECT_EQ(ProgressBar(0, 4, 8), "[        ]");
  EXPECT_EQ(ProgressBar(1, 4, 8), "[##      ]");
  EXPECT_EQ(ProgressBar(3, 4, 8), "[######  ]");
  EXPECT_EQ(ProgressBar(4, 4, 8), "[########]");
  // Rounds down; nothing to do counts as done; never past either end.
  EXPECT_EQ(ProgressBar(1, 3, 8), "[##      ]");
  EXPECT_EQ(ProgressBar(0, 0, 8), "[########]");
  EXPECT_EQ(ProgressBar(9, 4, 8), "[########]");
  EXPECT_EQ(ProgressBar(-1, 4, 8), "[        ]");
  EXPECT_EQ(ProgressBar(15, 30).size(), 32u);
}

}  // namespace
}  // namespace tessera
