#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "backend.pb.h"

namespace tessera {

// Batches sent to a gpulet whose proxy exited, held while the supervisor
// restarts it: routed again once the new proxy is up, or answered
// DEADLINE_EXCEEDED when their deadline passes first (the request's
// remaining budget, at most Options::max_wait) and UNAVAILABLE when the
// restart is given up or the backend stops. Bounded per gpulet: beyond
// the bound, and for a gpulet whose restarts were given up (closed until
// the next plan), a batch is not held (the caller answers it at once).
// Not thread-safe: its owner guards it.
class ParkedBatches {
 public:
  struct Options {
    int max_per_gpulet = 64;
    absl::Duration max_wait = absl::Seconds(10);
  };
  using Reply = std::function<void(BatchResponse)>;
  struct Entry {
    BatchRequest batch;
    Reply reply;
    absl::Time deadline;
  };

  explicit ParkedBatches(Options options) : options_(options) {}

  // Holds `batch` (received at `now`) and its reply; false, leaving both
  // untouched, when its gpulet is closed or already holds max_per_gpulet
  // batches.
  bool Park(BatchRequest& batch, Reply& reply, absl::Time now);
  // No more batches are held for `gpulet_id` (its restarts were given
  // up); returns those it held.
  std::vector<Entry> Close(const std::string& gpulet_id);
  bool closed(const std::string& gpulet_id) const {
    return closed_.count(gpulet_id) > 0;
  }
  // A new plan: every gpulet may be held for again; returns every batch
  // held, to be routed under that plan.
  std::vector<Entry> ReopenAll();
  // The batches held for `gpulet_id`, in arrival order.
  std::vector<Entry> Take(const std::string& gpulet_id);
  // The batches whose deadline is at or before `now`.
  std::vector<Entry> TakeExpired(absl::Time now);
  std::vector<Entry> TakeAll();
  int size() const;

  // Answers each entry: DEADLINE_EXCEEDED (expired) or UNAVAILABLE with
  // `why` (given up, stopping).
  static void AnswerExpired(std::vector<Entry> entries);
  static void AnswerUnavailable(std::vector<Entry> entries,
                                const std::string& why);

 private:
  const Options options_;
  std::map<std::string, std::vector<Entry>> by_gpulet_;
  std::set<std::string> closed_;
};

}  // namespace tessera
