#pragma once

#include <sys/types.h>

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

}  // namespace tessera
