#pragma once

#include <deque>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "frontend/inference_service.h"
#include "grpc_service.grpc.pb.h"
#include "grpcpp/support/server_callback.h"

namespace tessera {

// One ModelStreamInfer stream (gRPC's callback API): reads requests one
// after another, hands each to InferenceService::Infer as it arrives (so
// a stream's requests batch with everyone's), and writes the answers in
// the order the requests came, each failed one as its error_message. The
// stream ends OK after the client closes its side and every answer is
// written; a client that goes away ends it CANCELLED. Deletes itself when
// gRPC is done with it.
class InferStream final
    : public grpc::ServerBidiReactor<inference::ModelInferRequest,
                                     inference::ModelStreamInferResponse> {
 public:
  InferStream(InferenceService* service, grpc::CallbackServerContext* context);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

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
  // router may run after OnDone.
  struct State {
    absl::Mutex mu;
    InferStream* stream ABSL_GUARDED_BY(mu);
    std::deque<std::shared_ptr<Pending>> order ABSL_GUARDED_BY(mu);
    bool writing ABSL_GUARDED_BY(mu) = false;
    bool reads_done ABSL_GUARDED_BY(mu) = false;
    bool broken ABSL_GUARDED_BY(mu) = false;  // a write failed
    bool finished ABSL_GUARDED_BY(mu) = false;
  };

  // What to do next, decided under the lock and done after it (gRPC may
  // run a reaction inline): write the next answer when it is ready and
  // nothing is being written, or finish the stream when nothing is left.
  struct Step {
    InferStream* stream = nullptr;
    const inference::ModelStreamInferResponse* write = nullptr;
    std::optional<grpc::Status> finish;
    void Run() const;
  };
  static Step Next(State* state) ABSL_EXCLUSIVE_LOCKS_REQUIRED(state->mu);

  InferenceService* const service_;
  const InferenceService::CallOrigin origin_;
  const std::shared_ptr<State> state_ = std::make_shared<State>();
  // The request being read (only the reading side touches it).
  std::shared_ptr<Pending> reading_;
};

}  // namespace tessera
