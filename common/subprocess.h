#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tessera {

// A child process started with posix_spawn. The destructor kills (SIGKILL)
// and reaps a child still running, so no process outlives its owner by
// accident. Not thread-safe.
class Subprocess {
 public:
  struct Options {
    std::vector<std::string> argv;  // argv[0] is the executable path
    // Added to (or replacing in) the parent's environment.
    std::map<std::string, std::string> env;
    // child fd -> parent fd to pass as it (e.g. {3, channel_fd}); any
    // numbering works, including parent fds equal to child slots.
    std::map<int, int> inherit_fds;
  };

  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  static absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(
      const Options& options);

  pid_t pid() const { return pid_; }
  // True until the child has been reaped.
  bool Running();
  void Signal(int signo);
  // Waits up to `timeout` for the child to exit; returns its wait status,
  // or DEADLINE_EXCEEDED.
  absl::StatusOr<int> Wait(absl::Duration timeout);
  // SIGTERM, wait up to `grace`, then SIGKILL and reap.
  void Stop(absl::Duration grace);

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}

  pid_t pid_;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace tessera
