#include "common/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace tessera {

Subprocess::~Subprocess() {
  if (!reaped_) {
    Signal(SIGKILL);
    (void)Wait(absl::Seconds(5));
  }
}

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(
    const Options& options) {
  if (options.argv.empty()) {
    return absl::InvalidArgumentError("Subprocess: empty argv");
  }
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : options.env) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = options.argv;
  std::vector<char*> argv;
  for (auto& s : argv_copy) argv.push_back(s.data());
  argv.push_back(nullptr);

  // Map every source through a temporary copy numbered above all child
  // slots, so no dup2 overwrites a source still to be read (crosswise
  // mappings) and none maps a descriptor onto its own number (which would
  // keep it close-on-exec).
  int first_free = 3;
  for (const auto& [child_fd, parent_fd] : options.inherit_fds) {
    first_free = std::max(first_free, child_fd + 1);
  }
  std::vector<int> temporaries;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (const auto& [child_fd, parent_fd] : options.inherit_fds) {
    const int tmp = fcntl(parent_fd, F_DUPFD_CLOEXEC, first_free);
    if (tmp < 0) {
      const int err = errno;
      posix_spawn_file_actions_destroy(&actions);
      for (int t : temporaries) close(t);
      return absl::InvalidArgumentError(
          absl::StrCat("cannot pass fd ", parent_fd, " as ", child_fd, ": ",
                       std::strerror(err)));
    }
    temporaries.push_back(tmp);
    posix_spawn_file_actions_adddup2(&actions, tmp, child_fd);
  }
  pid_t pid;
  const int rc =
      posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  for (int t : temporaries) close(t);
  if (rc != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot start '", options.argv[0], "': ", std::strerror(rc)));
  }
  return std::unique_ptr<Subprocess>(new Subprocess(pid));
}

bool Subprocess::Running() {
  if (reaped_) return false;
  int status;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    wait_status_ = status;
    return false;
  }
  return true;
}

void Subprocess::Signal(int signo) {
  if (!reaped_) kill(pid_, signo);
}

absl::StatusOr<int> Subprocess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (Running()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("process ", pid_, " still running"));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return wait_status_;
}

void Subprocess::Stop(absl::Duration grace) {
  if (reaped_) return;
  Signal(SIGTERM);
  if (!Wait(grace).ok()) {
    Signal(SIGKILL);
    (void)Wait(absl::Seconds(10));
  }
}

}  // namespace tessera
