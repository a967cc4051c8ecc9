#include "proxy/error_text.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(ShortModelErrorTest, KeepsTheLastLineOfATorchScriptError) {
  const std::string what =
      "The following operation failed in the TorchScript interpreter.\n"
      "Traceback of TorchScript, serialized code (most recent call last):\n"
      "  File \"code/__torch__/models.py\", line 12, in forward\n"
      "    x = torch.embedding(weight, ids)\n"
      "\n"
      "RuntimeError: index out of range in self\n";
  EXPECT_EQ(ShortModelError(what), "RuntimeError: index out of range in self");
  EXPECT_EQ(ShortModelError("plain"), "plain");
  EXPECT_EQ(ShortModelError(std::string(500, 'x')).size(), 203u);
}

}  // namespace
}  // namespace tessera
