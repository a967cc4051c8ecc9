#include "common/allocator_tuning.h"

#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

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

void KeepOneHeapArena() {
  if (mallopt(M_ARENA_MAX, 1) != 1) {
    spdlog::warn("could not limit the allocator to one arena (mallopt failed)");
  }
}

void RestartWithGlibcTunable(char** argv, const char* tunable) {
  const char* current = std::getenv("GLIBC_TUNABLES");
  const bool had_tunables = current != nullptr;
  const std::string original = had_tunables ? current : "";
  const std::string name(tunable, std::strcspn(tunable, "="));
  std::string tunables = original;
  // Entries are "name=value", separated by ':'.
  for (size_t start = 0; start <= tunables.size();) {
    size_t end = tunables.find(':', start);
    if (end == std::string::npos) end = tunables.size();
    const std::string entry = tunables.substr(start, end - start);
    if (entry.compare(0, name.size() + 1, name + "=") == 0) return;
    start = end + 1;
  }
  tunables = tunables.empty() ? tunable : tunables + ":" + tunable;
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  spdlog::warn("could not restart with GLIBC_TUNABLES={}: {}", tunables,
               std::strerror(errno));
  if (had_tunables) {
    setenv("GLIBC_TUNABLES", original.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

}  // namespace tessera
