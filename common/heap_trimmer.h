#pragma once

#include <cstdint>
#include <functional>

namespace tessera {

// Gives freed heap back to the OS after a burst. The serving processes keep
// freed heap for the next large request (allocator_tuning.h keeps up to
// 256 MiB), which makes a burst of large (or malformed) requests look like a
// leak: the memory stays resident although nothing uses it. Tick() is called
// periodically with what the process holds for work right now; when the
// heap's free bytes exceed the threshold while the work held is below a
// quarter of it (the burst is over), the heap is trimmed (malloc_trim), so
// steady traffic keeps its warm heap. Not thread-safe: one caller ticks.
class HeapTrimmer {
 public:
  struct Options {
    int64_t free_bytes_threshold = int64_t{64} << 20;
  };
  // `free_heap_bytes` and `trim` default to the real allocator's (tests
  // inject their own).
  explicit HeapTrimmer(Options options,
                       std::function<int64_t()> free_heap_bytes = FreeHeapBytes,
                       std::function<void()> trim = TrimHeap)
      : options_(options),
        free_heap_bytes_(std::move(free_heap_bytes)),
        trim_(std::move(trim)) {}

  // Returns the free bytes it gave back (0: it did not trim).
  int64_t Tick(int64_t held_bytes);

  // Free bytes in the heap's arenas (mallinfo2's fordblks).
  static int64_t FreeHeapBytes();
  // Returns free heap pages to the OS (malloc_trim(0)).
  static void TrimHeap();

 private:
  const Options options_;
  std::function<int64_t()> free_heap_bytes_;
  std::function<void()> trim_;
};

}  // namespace tessera
