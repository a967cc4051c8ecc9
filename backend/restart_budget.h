#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace tessera {

// When a crashed proxy may be restarted: after a back-off that doubles with
// every restart of the same gpulet (initial_backoff, 2x, ... up to
// max_backoff), and not at all once it has been restarted max_restarts
// times within window (a crash loop: it stays down, and the backend is not
// ready, until a new plan resets the budget). Pure bookkeeping on the
// times it is given; not thread-safe.
class RestartBudget {
 public:
  struct Options {
    absl::Duration initial_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(8);
    int max_restarts = 5;
    absl::Duration window = absl::Seconds(60);
  };

  RestartBudget() : RestartBudget(Options()) {}
  explicit RestartBudget(Options options) : options_(options) {}

  enum class Verdict { kRestart, kWait, kGiveUp };
  // Whether gpulet `id`, found dead at `now`, may be restarted now. A
  // kRestart verdict counts as a restart.
  Verdict Check(const std::string& id, absl::Time now);
  // Check() for every gpulet of `exited` (found dead at `now`): those to
  // restart now, and those whose budget ran out, each of the latter listed
  // once until Reset().
  struct Triage {
    std::vector<std::string> restart;
    std::vector<std::string> given_up;
  };
  Triage Sort(const std::vector<std::string>& exited, absl::Time now);
  // Restarts of `id` counted within the window before `now`.
  int RecentRestarts(const std::string& id, absl::Time now) const;
  // A new plan: every gpulet starts with a fresh budget.
  void Reset() {
    restarts_.clear();
    reported_given_up_.clear();
  }

 private:
  Options options_;
  std::map<std::string, std::vector<absl::Time>> restarts_;
  std::set<std::string> reported_given_up_;
};

}  // namespace tessera
