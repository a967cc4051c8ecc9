#pragma once

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tessera {

// Runs `check` every `period` on a thread of its own (started by the
// constructor, joined by Stop() and the destructor), so that a proxy that
// exits is noticed within a period instead of at the next plan change.
// What a check does (reap, restart, report) is the owner's.
class ProxySupervisor {
 public:
  ProxySupervisor(absl::Duration period, std::function<void()> check);
  ~ProxySupervisor() { Stop(); }
  ProxySupervisor(const ProxySupervisor&) = delete;
  ProxySupervisor& operator=(const ProxySupervisor&) = delete;

  // Ends the loop after the check in progress, if any. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration period_;
  const std::function<void()> check_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tessera
