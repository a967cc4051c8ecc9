#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace tessera {

// The frontend's admission budget: how many ModelInfer calls, and how many
// of their request bytes, may be held at once (from acceptance until the
// answer), in all and per model. A call beyond any limit is refused at once
// with RESOURCE_EXHAUSTED (MEASURES.md: "queue or byte budget full"), before
// it is decoded, so overload cannot grow the frontend's memory or turn into
// silent deadlines. A limit of 0 is no limit. Thread-safe.
class AdmissionControl {
 public:
  // The defaults are the frontend's (tessera_frontend --help).
  struct Options {
    int64_t max_requests = 16384;
    // Request bytes (the serialized ModelInfer message, as received) plus
    // `per_request_overhead_bytes` each: what a held call costs in memory.
    int64_t max_bytes = int64_t{1} << 30;
    int64_t max_requests_per_model = 4096;
    int64_t per_request_overhead_bytes = 4096;
  };

  // What an admitted call holds; given back when destroyed (or reset).
  // Movable, not copyable.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept { *this = std::move(other); }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket() { Reset(); }
    // Gives the budget back now.
    void Reset();
    bool held() const { return owner_ != nullptr; }

   private:
    friend class AdmissionControl;
    Ticket(AdmissionControl* owner, std::string model, int64_t bytes)
        : owner_(owner), model_(std::move(model)), bytes_(bytes) {}
    AdmissionControl* owner_ = nullptr;
    std::string model_;
    int64_t bytes_ = 0;
  };

  explicit AdmissionControl(Options options) : options_(options) {}

  // Admits one call of `model` whose request holds `request_bytes`, or
  // says which limit refuses it (RESOURCE_EXHAUSTED).
  absl::StatusOr<Ticket> Admit(absl::string_view model, int64_t request_bytes)
      ABSL_LOCKS_EXCLUDED(mu_);

  struct Usage {
    int64_t requests = 0;
    int64_t bytes = 0;
    // Models with calls held.
    std::map<std::string, int64_t> requests_per_model;
    int64_t refused = 0;  // since start
  };
  Usage usage() const ABSL_LOCKS_EXCLUDED(mu_);
  const Options& options() const { return options_; }

 private:
  void Release(const std::string& model, int64_t bytes)
      ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  int64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t, std::less<>> per_model_ ABSL_GUARDED_BY(mu_);
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tessera
