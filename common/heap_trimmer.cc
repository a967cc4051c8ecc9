#include "common/heap_trimmer.h"

#include <malloc.h>

#include <algorithm>

namespace tessera {

int64_t HeapTrimmer::Tick(int64_t held_bytes) {
  const int64_t free_bytes = free_heap_bytes_();
  floor_free_bytes_ = std::min(floor_free_bytes_, free_bytes);
  const int64_t fresh = free_bytes - floor_free_bytes_;
  settled_ticks_ = fresh > options_.settle_free_bytes ? settled_ticks_ + 1 : 0;
  const bool burst_over = fresh > options_.free_bytes_threshold &&
                          held_bytes * 4 < options_.free_bytes_threshold;
  if (!burst_over && settled_ticks_ < options_.settle_ticks) return 0;
  trim_();
  floor_free_bytes_ = free_heap_bytes_();
  settled_ticks_ = 0;
  return fresh;
}

int64_t HeapTrimmer::FreeHeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.fordblks);
}

void HeapTrimmer::TrimHeap() { malloc_trim(0); }

}  // namespace tessera
