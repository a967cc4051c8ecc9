#pragma once

#include <functional>
#include <list>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tessera {

// Threads for work that must not run on an event loop (a unary call that
// waits for proxies to start, or for a plan), owned instead of detached:
// JoinAll() and the destructor wait for every one. Finished threads are
// joined when the next one starts, so a long-lived owner keeps only the
// threads still running. Thread-safe.
class OwnedThreads {
 public:
  OwnedThreads() = default;
  OwnedThreads(const OwnedThreads&) = delete;
  OwnedThreads& operator=(const OwnedThreads&) = delete;
  ~OwnedThreads() { JoinAll(); }

  void Start(std::function<void()> work) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for every thread started so far.
  void JoinAll() ABSL_LOCKS_EXCLUDED(mu_);
  // Threads not yet joined (running, or finished since the last Start).
  int size() const ABSL_LOCKS_EXCLUDED(mu_);
  // Gives up on the threads started so far (a shutdown that found calls
  // stuck past its deadline leaves them rather than hang).
  void Abandon() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::thread thread;
    std::shared_ptr<bool> done;  // guarded by mu_
  };
  mutable absl::Mutex mu_;
  std::list<Entry> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
