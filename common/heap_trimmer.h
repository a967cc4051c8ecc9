#pragma once

#include <cstdint>
#include <functional>

namespace tessera {

// Gives freed heap back to the OS after a burst. The serving processes keep
// freed heap for the next large request (allocator_tuning.h keeps up to
// 256 MiB), which makes a burst of large (or malformed) requests look like a
// leak: the memory stays resident although nothing uses it. Tick() is called
// periodically with what the process holds for work right now, and trims the
// heap (malloc_trim) when
//  - a burst is over: the heap's fresh free bytes exceed
//    `free_bytes_threshold` while the work held is below a quarter of it, or
//  - the heap has settled: fresh free bytes stayed above `settle_free_bytes`
//    for `settle_ticks` ticks in a row (a smaller burst, or steady traffic,
//    whose warm heap costs a few page faults to rebuild).
// "Fresh" free bytes are those above the least free seen since the last
// trim: a trim leaves the pages of free chunks counted as free by the
// allocator but no longer resident, so the count alone would trim (and
// claim to return) the same bytes every tick. Only the main arena's heap is
// trimmed whole; give the process one arena (KeepOneHeapArena). Not
// thread-safe: one caller ticks.
class HeapTrimmer {
 public:
  struct Options {
    int64_t free_bytes_threshold = int64_t{64} << 20;
    int64_t settle_free_bytes = int64_t{1} << 20;
    int settle_ticks = 20;
  };
  // `free_heap_bytes` and `trim` default to the real allocator's (tests
  // inject their own).
  explicit HeapTrimmer(Options options,
                       std::function<int64_t()> free_heap_bytes = FreeHeapBytes,
                       std::function<void()> trim = TrimHeap)
      : options_(options),
        free_heap_bytes_(std::move(free_heap_bytes)),
        trim_(std::move(trim)) {}

  // Returns the fresh free bytes it trimmed (an upper bound on what went
  // back to the OS; 0: it did not trim).
  int64_t Tick(int64_t held_bytes);

  // Free bytes in the heap's arenas (mallinfo2's fordblks).
  static int64_t FreeHeapBytes();
  // Returns free heap pages to the OS (malloc_trim(0)).
  static void TrimHeap();

 private:
  const Options options_;
  std::function<int64_t()> free_heap_bytes_;
  std::function<void()> trim_;
  // Least free bytes seen since the last trim (right after it: what the
  // trim left counted as free).
  int64_t floor_free_bytes_ = 0;
  int settled_ticks_ = 0;
};

}  // namespace tessera
