#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpc_service.pb.h"

namespace tessera {

// Triton's per-model statistics, as its ModelStatistics RPC reports them:
// per model and version, cumulative counts and durations of successful and
// failed requests, of the time successful ones queued and executed, and of
// executions per batch size. Calls refused before their version resolved
// are not counted (as in Triton, which never admits them). Thread-safe.
class InferenceStatistics {
 public:
  // One answered request: `items` inferences (its batch dimension),
  // `latency` from arrival to answer; `queued` and `executed` count only
  // when it succeeded. `now` stamps last_inference.
  void RecordRequest(const std::string& model, const std::string& version,
                     bool ok, absl::Duration latency, absl::Duration queued,
                     absl::Duration executed, int64_t items, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One successful execution of a batch of `batch_size` inferences.
  void RecordExecution(const std::string& model, const std::string& version,
                       int64_t batch_size, absl::Duration executed)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The statistics of `model` ("": every model) and `version` ("": every
  // version), in name and version order. Models without a request yet are
  // left out.
  inference::ModelStatisticsResponse Report(const std::string& model,
                                            const std::string& version) const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, inference::ModelStatistics>
      stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tessera
