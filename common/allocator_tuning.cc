#include "common/allocator_tuning.h"

#include <malloc.h>

#include "spdlog/spdlog.h"

namespace tessera {

void TuneAllocatorForLargeMessages() {
  // Fixing either threshold also switches off glibc's dynamic adjustment
  // of both.
  if (mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) != 1 ||
      mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) != 1) {
    spdlog::warn("could not tune the allocator (mallopt failed)");
  }
}

}  // namespace tessera
