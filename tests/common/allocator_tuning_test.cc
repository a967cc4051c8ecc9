#include "common/allocator_tuning.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

// This process's arguments, for a restart.
std::vector<std::string> OwnArguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)),
                        std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < all.size();) {
    const size_t end = all.find('\0', start);
    args.push_back(all.substr(start, end - start));
    start = end == std::string::npos ? all.size() : end + 1;
  }
  return args;
}

// This process's name as ps and pgrep show it (/proc/self/comm).
std::string OwnName() {
  std::ifstream in("/proc/self/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// Runs in a death-test child, so the restart execs only that child: the
// restarted process runs the same statement again and finds the tunable
// set, after the one it already had, and its own name, not "exe".
TEST(AllocatorTuningTest, RestartsOnceWithTheTunableAdded) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::vector<std::string> args = OwnArguments();
        std::vector<char*> argv;
        for (std::string& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        const char* now = std::getenv("GLIBC_TUNABLES");
        if (now != nullptr && std::strstr(now, "tcache_count=0") != nullptr) {
          RestartWithGlibcTunable(argv.data(), "glibc.malloc.tcache_count=0");
          std::fprintf(stderr, "restarted with %s as %s\n", now,
                       OwnName().c_str());
          std::_Exit(0);
        }
        setenv("GLIBC_TUNABLES", "glibc.malloc.mxfast=0", 1);
        RestartWithGlibcTunable(argv.data(), "glibc.malloc.tcache_count=0");
        std::fprintf(stderr, "not restarted\n");
        std::_Exit(1);
      },
      testing::ExitedWithCode(0),
      "restarted with glibc.malloc.mxfast=0:glibc.malloc.tcache_count=0 as "
      "tessera_unit_te\n");
}

TEST(AllocatorTuningTest, KeepsTheOperatorsOwnValue) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("GLIBC_TUNABLES",
               "glibc.malloc.mxfast=0:glibc.malloc.tcache_count=7", 1);
        char name[] = "/nonexistent/tessera";
        char* argv[2] = {};
        argv[0] = name;
        RestartWithGlibcTunable(argv, "glibc.malloc.tcache_count=0");
        std::fprintf(stderr, "kept %s\n", std::getenv("GLIBC_TUNABLES"));
        std::_Exit(0);
      },
      testing::ExitedWithCode(0),
      "kept glibc.malloc.mxfast=0:glibc.malloc.tcache_count=7\n");
}

}  // namespace
}  // namespace tessera
