#include "common/heap_trimmer.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "common/allocator_tuning.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerHeap = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerHeap = true;
#else
constexpr bool kSanitizerHeap = false;
#endif
#else
constexpr bool kSanitizerHeap = false;
#endif

TEST(HeapTrimmerTest, TrimsOnlyWhenMuchIsFreeAndTheBurstIsOver) {
  int64_t free_bytes = 0;
  int trims = 0;
  HeapTrimmer trimmer(
      {64 * kMiB}, [&] { return free_bytes; }, [&] { ++trims; });
  free_bytes = 10 * kMiB;  // little free: keep it warm
  EXPECT_EQ(trimmer.Tick(0), 0);
  free_bytes = 200 * kMiB;  // much free, but work still holds 32 MiB
  EXPECT_EQ(trimmer.Tick(32 * kMiB), 0);
  EXPECT_EQ(trims, 0);
  EXPECT_EQ(trimmer.Tick(1 * kMiB), 200 * kMiB);  // the burst is over
  EXPECT_EQ(trims, 1);
  // The trimmed pages still count as free: they are not claimed again.
  EXPECT_EQ(trimmer.Tick(0), 0);
  EXPECT_EQ(trims, 1);
  free_bytes = 150 * kMiB;  // some reused, then freed again in a new burst
  EXPECT_EQ(trimmer.Tick(0), 0);
  free_bytes = 250 * kMiB;
  EXPECT_EQ(trimmer.Tick(0), 100 * kMiB);
  EXPECT_EQ(trims, 2);
}

TEST(HeapTrimmerTest, TrimsASettledHeapAfterItsTicks) {
  int64_t free_bytes = 0;
  int trims = 0;
  HeapTrimmer::Options options;
  options.settle_free_bytes = 1 * kMiB;
  options.settle_ticks = 3;
  HeapTrimmer trimmer(
      options, [&] { return free_bytes; }, [&] { ++trims; });
  free_bytes = kMiB;  // not above the settle bytes: never trimmed
  for (int i = 0; i < 10; ++i) EXPECT_EQ(trimmer.Tick(0), 0);
  free_bytes = 4 * kMiB;
  EXPECT_EQ(trimmer.Tick(0), 0);
  free_bytes = 3 * kMiB;
  EXPECT_EQ(trimmer.Tick(0), 0);
  EXPECT_EQ(trimmer.Tick(0), 3 * kMiB);  // three ticks above 1 MiB
  EXPECT_EQ(trims, 1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(trimmer.Tick(0), 0);
  EXPECT_EQ(trims, 1);
}

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// The real allocator, tuned as the serving processes tune it: 200 MiB of
// 1 MiB buffers freed stay resident until the trimmer gives them back.
TEST(HeapTrimmerTest, GivesAFreedBurstBackToTheOs) {
  if (kSanitizerHeap) {
    GTEST_SKIP() << "a sanitizer's allocator replaces glibc's heap";
  }
  TuneAllocatorForLargeMessages();
  std::vector<char*> buffers;
  for (int i = 0; i < 200; ++i) {
    char* b = static_cast<char*>(std::malloc(kMiB));
    ASSERT_NE(b, nullptr);
    std::memset(b, 1, kMiB);  // resident
    buffers.push_back(b);
  }
  for (char* b : buffers) std::free(b);
  const int64_t before = ResidentBytes();
  HeapTrimmer trimmer({64 * kMiB});
  const int64_t trimmed = trimmer.Tick(0);
  const int64_t after = ResidentBytes();
  EXPECT_GE(trimmed, 150 * kMiB);
  EXPECT_LE(after, before - 150 * kMiB)
      << "resident " << before / kMiB << " MiB -> " << after / kMiB << " MiB";
}

// A burst another thread served: with one arena the trim gives it back
// (a thread arena would keep it at its top). Runs in a fresh process, since
// the arena limit holds only for threads that have no arena yet.
TEST(HeapTrimmerTest, GivesAnotherThreadsBurstBackWithOneArena) {
  if (kSanitizerHeap) {
    GTEST_SKIP() << "a sanitizer's allocator replaces glibc's heap";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        KeepOneHeapArena();
        TuneAllocatorForLargeMessages();
        std::thread([] {
          std::vector<char*> buffers;
          for (int i = 0; i < 48; ++i) {
            char* b = static_cast<char*>(std::malloc(kMiB));
            if (b == nullptr) std::_Exit(2);
            std::memset(b, 1, kMiB);
            buffers.push_back(b);
          }
          for (char* b : buffers) std::free(b);
        }).join();
        const int64_t before = ResidentBytes();
        HeapTrimmer::TrimHeap();
        const int64_t after = ResidentBytes();
        std::fprintf(stderr, "resident %lld MiB -> %lld MiB\n",
                     static_cast<long long>(before / kMiB),
                     static_cast<long long>(after / kMiB));
        std::_Exit(after <= before - 40 * kMiB ? 0 : 1);
      },
      testing::ExitedWithCode(0), "resident");
}

}  // namespace
}  // namespace tessera
