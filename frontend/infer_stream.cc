#include "frontend/infer_stream.h"

#include "absl/time/clock.h"

namespace tessera {

void InferStream::Arm(InferenceService* service,
                      InferenceService::AsyncService* async,
                      grpc::ServerCompletionQueue* cq, AsyncCallCount* calls) {
  new InferStream(service, async, cq, calls);
}

InferStream::InferStream(InferenceService* service,
                         InferenceService::AsyncService* async,
                         grpc::ServerCompletionQueue* cq, AsyncCallCount* calls)
    : service_(service), async_(async), cq_(cq), calls_(calls) {
  calls_->Created();
  async_->RequestModelStreamInfer(&context_, &stream_, cq_, cq_, &accepted_);
}

InferStream::~InferStream() { calls_->Destroyed(); }

void InferStream::OnAccepted(bool ok) {
  if (!ok) {  // the server is shutting down
    delete this;
    return;
  }
  Arm(service_, async_, cq_, calls_);
  // The stream's deadline bounds its calls, but it marks no call's
  // arrival (see InferenceService::CallOrigin).
  origin_ = InferenceService::CallOrigin{context_.peer(),
                                         absl::FromChrono(context_.deadline()),
                                         /*deadline_marks_arrival=*/false};
  {
    absl::MutexLock lock(&state_->mu);
    state_->stream = this;
    // Accepted on the loop that runs the stream's queue.
    state_->loop_writes = DeferredWrites::OfThisThread();
  }
  StartRead();
}

void InferStream::StartRead() {
  reading_ = std::make_shared<Pending>();
  stream_.Read(&reading_->request, &read_);
}

void InferStream::OnRead(bool ok) {
  if (!ok) {  // the client closed its side, or went away
    absl::MutexLock lock(&state_->mu);
    state_->reads_done = true;
    Next(state_.get());
    return;
  }
  std::shared_ptr<Pending> pending = std::move(reading_);
  {
    absl::MutexLock lock(&state_->mu);
    state_->order.push_back(pending);
  }
  // Read the next request before this one is served: Infer may finish it
  // inline, and the stream must not finish while a read is pending.
  StartRead();
  service_->Infer(*origin_, &pending->request, &pending->response,
                  [state = state_, pending](const grpc::Status& status) {
                    absl::MutexLock lock(&state->mu);
                    if (status.ok()) {
                      *pending->answer.mutable_infer_response() =
                          std::move(pending->response);
                    } else {
                      pending->answer.set_error_message(status.error_message());
                      // The error names its request (Triton's clients match
                      // answers to requests by id).
                      pending->answer.mutable_infer_response()->set_id(
                          pending->request.id());
                      pending->answer.mutable_infer_response()->set_model_name(
                          pending->request.model_name());
                      // And its gRPC code, which error_message cannot carry.
                      (*pending->answer.mutable_infer_response()
                            ->mutable_parameters())["tessera.status_code"]
                          .set_int64_param(status.error_code());
                    }
                    pending->answered = true;
                    Next(state.get());
                  });
}

void InferStream::OnWritten(bool ok) {
  absl::MutexLock lock(&state_->mu);
  state_->writing = false;
  if (!ok) state_->broken = true;
  state_->order.pop_front();
  Next(state_.get());
}

void InferStream::Next(State* state) {
  InferStream* stream = state->stream;
  if (stream == nullptr || state->writing || state->finishing) return;
  if (state->broken) {
    // The client is gone: answers have nowhere to go.
    if (state->reads_done) {
      state->finishing = true;
      stream->stream_.Finish(
          grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"),
          &stream->finished_);
    }
    return;
  }
  if (!state->order.empty()) {
    const Pending& next = *state->order.front();
    if (!next.answered) return;
    const bool more_ready =
        state->order.size() > 1 && state->order[1]->answered;
    if (!more_ready && !state->flushing && state->loop_writes != nullptr &&
        state->loop_writes == DeferredWrites::OfThisThread()) {
      // Alone for now: the loop flushes it when its queue runs dry or
      // after a few events, with whatever was answered meanwhile.
      if (!state->deferred) {
        state->deferred = true;
        state->loop_writes->Defer(state->shared_from_this());
      }
      return;
    }
    state->writing = true;
    // While more answers are ready behind this one, gRPC may hold it and
    // send them together (one socket write for many answers under load).
    grpc::WriteOptions options;
    if (more_ready) options.set_buffer_hint();
    stream->stream_.Write(next.answer, options, &stream->written_);
    return;
  }
  if (state->reads_done) {
    state->finishing = true;
    stream->stream_.Finish(grpc::Status::OK, &stream->finished_);
  }
}

void InferStream::State::FlushDeferred() {
  absl::MutexLock lock(&mu);
  deferred = false;
  flushing = true;
  Next(this);
  flushing = false;
}

void InferStream::OnFinished(bool) {
  // Finish starts only after the last read and write completed: nothing
  // of this stream is pending on the queue now.
  {
    absl::MutexLock lock(&state_->mu);
    state_->stream = nullptr;
  }
  delete this;
}

}  // namespace tessera
