#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpc_service.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace tessera {

// One ModelStreamInfer stream of the load generator. Requests are written
// one at a time in the order they are sent (a request waits in the lane
// while an earlier one is being written, so a slow server shows as
// latency, not as a lower offered rate); each answer is matched to its
// request by id. Every request is reported exactly once: with its code
// when answered (DEADLINE_EXCEEDED when the answer came after `timeout`),
// or with no code when the stream ended without its answer.
//
// The code of a failed request is read from the answer's
// "tessera.status_code" parameter (the gRPC code Tessera's frontend adds
// to each error_message); without it, UNKNOWN.
class StreamLane
    : public grpc::ClientBidiReactor<inference::ModelInferRequest,
                                     inference::ModelStreamInferResponse> {
 public:
  using Report = std::function<void(absl::Time sent,
                                    std::optional<absl::StatusCode> code)>;

  // Opens the stream; it ends at `stream_deadline` at the latest.
  // `request` is each request's template: its id is set per request, and
  // its "timeout" parameter (microseconds, Triton's convention) to
  // `timeout`.
  StreamLane(inference::GRPCInferenceService::Stub* stub,
             const inference::ModelInferRequest& request,
             absl::Duration timeout, absl::Time stream_deadline, Report report);
  StreamLane(const StreamLane&) = delete;
  StreamLane& operator=(const StreamLane&) = delete;
  ~StreamLane() override;

  // Sends one request, stamped `sent`.
  void Send(absl::Time sent);
  // No more requests: the lane closes its side once every request is
  // written, and the server ends the stream after its last answer.
  void Close();
  // Waits until the stream has ended, cancelling it at `deadline`.
  void Wait(absl::Time deadline);

  void OnWriteDone(bool ok) override;
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  // Writes the next queued request, or closes the writing side when the
  // lane is closed and nothing is left.
  void WriteNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const absl::Duration timeout_;
  const Report report_;
  grpc::ClientContext context_;
  inference::ModelInferRequest write_;  // the request being written
  inference::ModelStreamInferResponse read_;

  absl::Mutex mu_;
  std::deque<std::pair<int64_t, absl::Time>> queued_ ABSL_GUARDED_BY(mu_);
  // Written or being written, not yet answered: id -> sent.
  absl::flat_hash_map<int64_t, absl::Time> awaiting_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool writes_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // a write failed
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tessera
