#include "common/listen_address.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(ListenAddressTest, OnlyLoopbackHostsAreLoopback) {
  for (const char* a :
       {"127.0.0.1:8101", "127.1.2.3:0", "localhost:8101", "[::1]:8101"}) {
    EXPECT_TRUE(IsLoopbackListenAddress(a)) << a;
  }
  for (const char* a : {"0.0.0.0:8101", "[::]:8101", "10.0.0.2:8101",
                        "backend0:8101", "169.254.77.2:8101"}) {
    EXPECT_FALSE(IsLoopbackListenAddress(a)) << a;
  }
}

}  // namespace
}  // namespace tessera
