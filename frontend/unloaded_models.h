#pragma once

#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tessera {

// Models unloaded through the KServe repository API: refused on the data
// path and left out of the planner's snapshots. Its own lock, so the data
// path never waits on the control plane. Thread-safe.
class UnloadedModels {
 public:
  void Set(const std::string& model, bool unloaded) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (unloaded) {
      models_.insert(model);
    } else {
      models_.erase(model);
    }
  }
  bool Contains(const std::string& model) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return models_.count(model) > 0;
  }
  std::set<std::string> All() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return models_;
  }

 private:
  mutable absl::Mutex mu_;
  std::set<std::string> models_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
