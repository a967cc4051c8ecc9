#include "common/heap_trimmer.h"

#include <malloc.h>

namespace tessera {

int64_t HeapTrimmer::Tick(int64_t held_bytes) {
  if (held_bytes * 4 >= options_.free_bytes_threshold) return 0;
  const int64_t free_bytes = free_heap_bytes_();
  if (free_bytes <= options_.free_bytes_threshold) return 0;
  trim_();
  return free_bytes;
}

int64_t HeapTrimmer::FreeHeapBytes() {
  const struct mallinfo2 info = mallinfo2();
  return static_cast<int64_t>(info.fordblks);
}

void HeapTrimmer::TrimHeap() { malloc_trim(0); }

}  // namespace tessera
