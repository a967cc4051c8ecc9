#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

// Pins the calling thread (and the threads it starts later) to `cores`.
absl::Status SetCpuAffinity(const std::vector<int>& cores);
// Cores process `pid` (0 = self) may run on, ascending.
absl::StatusOr<std::vector<int>> GetCpuAffinity(pid_t pid);
// Parses "0,2-3" into {0, 2, 3}.
absl::StatusOr<std::vector<int>> ParseCoreList(const std::string& text);
// Inverse of ParseCoreList, e.g. "0,2,3".
std::string FormatCoreList(const std::vector<int>& cores);

// Runs body(0), ..., body(n - 1) at once, each on a thread of its own
// pinned to cores[i mod cores.size()] (operator groups on CPU cores: one
// core per member, no migration mid-range); returns when all have ended,
// with each one's status (a pinning failure is that member's).
std::vector<absl::Status> RunPinnedInParallel(
    int n, const std::vector<int>& cores,
    const std::function<absl::Status(int)>& body);

}  // namespace tessera
