#include "common/owned_threads.h"

namespace tessera {

void OwnedThreads::Start(std::function<void()> work) {
  std::list<Entry> finished;
  absl::MutexLock lock(&mu_);
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (*it->done) {
      finished.splice(finished.end(), threads_, it++);
    } else {
      ++it;
    }
  }
  auto done = std::make_shared<bool>(false);
  threads_.push_back({std::thread([this, done, work = std::move(work)] {
                        work();
                        absl::MutexLock lock(&mu_);
                        *done = true;
                      }),
                      done});
  // `finished` threads have returned from their work; joining them under
  // the lock is safe (they no longer take it) and quick.
  for (Entry& e : finished) e.thread.join();
}

void OwnedThreads::JoinAll() {
  std::list<Entry> all;
  {
    absl::MutexLock lock(&mu_);
    all.swap(threads_);
  }
  for (Entry& e : all) e.thread.join();
}

void OwnedThreads::Abandon() {
  absl::MutexLock lock(&mu_);
  for (Entry& e : threads_) e.thread.detach();
  threads_.clear();
}

int OwnedThreads::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(threads_.size());
}

}  // namespace tessera
