#pragma once

#include <deque>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/async_call.h"
#include "common/deferred_writes.h"
#include "frontend/inference_service.h"
#include "grpc_service.grpc.pb.h"

namespace tessera {

// One ModelStreamInfer stream on gRPC's asynchronous API (the event loop
// that accepted it runs its reads and completions; gRPC's callback API
// would start threads of its own that poll every socket of the process,
// docs/benchmarks.md). Reads requests one after another, hands each to
// InferenceService::Infer as it arrives (so a stream's requests batch with
// everyone's), and writes the answers in the order the requests came, each
// failed one as its error_message. On a loop that defers writes
// (--coalesce_stream_answers), an answer that would leave alone is held
// for the loop's next flush (DeferredWrites), so answers made close
// together, refusals under overload most of all, share one socket write. The
// stream ends OK after the client closes its side and every answer is written;
// a client that goes away ends it CANCELLED. Deletes itself when its last
// operation completes.
class InferStream {
 public:
  // Arms one stream on `cq`; it arms the next when it is accepted.
  static void Arm(InferenceService* service,
                  InferenceService::AsyncService* async,
                  grpc::ServerCompletionQueue* cq, AsyncCallCount* calls);

 private:
  // One request from its arrival until its answer is written. Held by the
  // stream and by the call's finish callback.
  struct Pending {
    inference::ModelInferRequest request;
    inference::ModelInferResponse response;
    inference::ModelStreamInferResponse answer;
    bool answered = false;
  };
  // What outlives the stream: the finish callbacks of calls still in the
  // router may run after it is gone.
  struct State final : DeferredWrites::Writer,
                       std::enable_shared_from_this<State> {
    // Writes the answer held for the loop's flush.
    void FlushDeferred() override ABSL_LOCKS_EXCLUDED(mu);

    absl::Mutex mu;
    InferStream* stream ABSL_GUARDED_BY(mu) = nullptr;  // null: finished
    std::deque<std::shared_ptr<Pending>> order ABSL_GUARDED_BY(mu);
    bool writing ABSL_GUARDED_BY(mu) = false;
    bool reads_done ABSL_GUARDED_BY(mu) = false;
    bool broken ABSL_GUARDED_BY(mu) = false;  // a write failed
    bool finishing ABSL_GUARDED_BY(mu) = false;
    // The deferred writes of the loop that runs this stream's operations.
    DeferredWrites* loop_writes ABSL_GUARDED_BY(mu) = nullptr;
    bool deferred ABSL_GUARDED_BY(mu) = false;  // waits for loop_writes
    bool flushing ABSL_GUARDED_BY(mu) = false;  // in FlushDeferred
  };

  InferStream(InferenceService* service, InferenceService::AsyncService* async,
              grpc::ServerCompletionQueue* cq, AsyncCallCount* calls);
  ~InferStream();

  void OnAccepted(bool ok);
  void OnRead(bool ok);
  void OnWritten(bool ok);
  void OnFinished(bool ok);
  void StartRead();
  // Writes the next answer when it is ready and nothing is being written
  // (on the stream's own loop, one with no ready answer behind it waits
  // for the loop's flush), or finishes the stream when nothing is left.
  // Operations of the asynchronous API complete on the queue, never inline, so
  // they start under the lock.
  static void Next(State* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu);

  InferenceService* const service_;
  InferenceService::AsyncService* const async_;
  grpc::ServerCompletionQueue* const cq_;
  AsyncCallCount* const calls_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<inference::ModelStreamInferResponse,
                                inference::ModelInferRequest>
      stream_{&context_};
  AsyncOp<InferStream> accepted_{this, &InferStream::OnAccepted};
  AsyncOp<InferStream> read_{this, &InferStream::OnRead};
  AsyncOp<InferStream> written_{this, &InferStream::OnWritten};
  AsyncOp<InferStream> finished_{this, &InferStream::OnFinished};
  // Known once the stream is accepted.
  std::optional<InferenceService::CallOrigin> origin_;
  const std::shared_ptr<State> state_ = std::make_shared<State>();
  // The request being read (only the reading side touches it).
  std::shared_ptr<Pending> reading_;
};

}  // namespace tessera
