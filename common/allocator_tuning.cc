#include "common/allocator_tuning.h"

#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
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

namespace {

// An exec of /proc/self/exe names the process "exe" (ps, top, pgrep, the
// kernel's logs). Gives it back the name of its command, as the kernel
// gave it at the first start: the last part of argv[0], at most 15 bytes.
void RestoreNameAfterRestart(const char* argv0) {
  char name[16] = {};
  if (argv0 == nullptr || prctl(PR_GET_NAME, name) != 0 ||
      std::strcmp(name, "exe") != 0) {
    return;
  }
  const char* slash = std::strrchr(argv0, '/');
  const std::string command(slash == nullptr ? argv0 : slash + 1);
  if (command.empty()) return;
  prctl(PR_SET_NAME, command.substr(0, sizeof(name) - 1).c_str());
}

}  // namespace

void RestartWithGlibcTunable(char** argv, const char* tunable) {
  const char* current = std::getenv("GLIBC_TUNABLES");
  const bool had_tunables = current != nullptr;
  const std::string original = had_tunables ? current : "";
  const std::string prefix =
      std::string(tunable, std::strcspn(tunable, "=")) + "=";
  // Entries are "name=value", separated by ':'.
  for (absl::string_view entry : absl::StrSplit(original, ':')) {
    if (absl::StartsWith(entry, prefix)) {
      RestoreNameAfterRestart(argv[0]);
      return;
    }
  }
  const std::string tunables =
      original.empty() ? tunable : absl::StrCat(original, ":", tunable);
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
