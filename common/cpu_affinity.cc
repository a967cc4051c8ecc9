#include "common/cpu_affinity.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tessera {

absl::Status SetCpuAffinity(const std::vector<int>& cores) {
  if (cores.empty()) return absl::InvalidArgumentError("empty core set");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores) {
    if (c < 0 || c >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("bad core ", c));
    }
    CPU_SET(c, &set);
  }
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sched_setaffinity(", FormatCoreList(cores),
                     "): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> GetCpuAffinity(pid_t pid) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof(set), &set) != 0) {
    return absl::NotFoundError(
        absl::StrCat("sched_getaffinity(", pid, "): ", std::strerror(errno)));
  }
  std::vector<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  }
  return cores;
}

absl::StatusOr<std::vector<int>> ParseCoreList(const std::string& text) {
  std::vector<int> cores;
  for (absl::string_view part :
       absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> range = absl::StrSplit(part, '-');
    int lo, hi;
    if (range.size() == 1 && absl::SimpleAtoi(range[0], &lo)) {
      hi = lo;
    } else if (range.size() == 2 && absl::SimpleAtoi(range[0], &lo) &&
               absl::SimpleAtoi(range[1], &hi) && lo <= hi) {
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("bad core list '", text, "'"));
    }
    for (int c = lo; c <= hi; ++c) cores.push_back(c);
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  if (cores.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("empty core list '", text, "'"));
  }
  return cores;
}

std::string FormatCoreList(const std::vector<int>& cores) {
  return absl::StrJoin(cores, ",");
}

std::vector<absl::Status> RunPinnedInParallel(
    int n, const std::vector<int>& cores,
    const std::function<absl::Status(int)>& body) {
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&cores, &body, &statuses, i] {
      statuses[i] = cores.empty() ? absl::OkStatus()
                                  : SetCpuAffinity({cores[i % cores.size()]});
      if (statuses[i].ok()) statuses[i] = body(i);
    });
  }
  for (std::thread& t : threads) t.join();
  return statuses;
}

}  // namespace tessera
