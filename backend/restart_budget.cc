#include "backend/restart_budget.h"

#include <algorithm>

namespace tessera {

int RestartBudget::RecentRestarts(const std::string& id, absl::Time now) const {
  auto it = restarts_.find(id);
  if (it == restarts_.end()) return 0;
  return static_cast<int>(
      std::count_if(it->second.begin(), it->second.end(),
                    [&](absl::Time t) { return now - t < options_.window; }));
}

RestartBudget::Verdict RestartBudget::Check(const std::string& id,
                                            absl::Time now) {
  std::vector<absl::Time>& times = restarts_[id];
  times.erase(
      std::remove_if(times.begin(), times.end(),
                     [&](absl::Time t) { return now - t >= options_.window; }),
      times.end());
  if (static_cast<int>(times.size()) >= options_.max_restarts) {
    return Verdict::kGiveUp;
  }
  if (!times.empty()) {
    absl::Duration backoff = options_.initial_backoff;
    for (size_t i = 1; i < times.size(); ++i) {
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
    if (now - times.back() < backoff) return Verdict::kWait;
  }
  times.push_back(now);
  return Verdict::kRestart;
}

RestartBudget::Triage RestartBudget::Sort(
    const std::vector<std::string>& exited, absl::Time now) {
  Triage triage;
  for (const std::string& id : exited) {
    switch (Check(id, now)) {
      case Verdict::kRestart:
        triage.restart.push_back(id);
        break;
      case Verdict::kGiveUp:
        if (reported_given_up_.insert(id).second) triage.given_up.push_back(id);
        break;
      case Verdict::kWait:
        break;
    }
  }
  return triage;
}

}  // namespace tessera
