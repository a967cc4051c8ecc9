#include "frontend/infer_stream.h"

#include "absl/time/clock.h"

namespace tessera {

InferStream::InferStream(InferenceService* service,
                         grpc::CallbackServerContext* context)
    : service_(service),
      // The stream's deadline bounds its calls, but it marks no call's
      // arrival (see InferenceService::CallOrigin).
      origin_{context->peer(), absl::FromChrono(context->deadline()),
              /*deadline_marks_arrival=*/false} {
  {
    absl::MutexLock lock(&state_->mu);
    state_->stream = this;
  }
  reading_ = std::make_shared<Pending>();
  StartRead(&reading_->request);
}

void InferStream::OnReadDone(bool ok) {
  if (!ok) {
    Step step;
    {
      absl::MutexLock lock(&state_->mu);
      state_->reads_done = true;
      step = Next(state_.get());
    }
    step.Run();
    return;
  }
  std::shared_ptr<Pending> pending = std::move(reading_);
  {
    absl::MutexLock lock(&state_->mu);
    state_->order.push_back(pending);
  }
  service_->Infer(
      origin_, &pending->request, &pending->response,
      [state = state_, pending](const grpc::Status& status) {
        Step step;
        {
          absl::MutexLock lock(&state->mu);
          if (status.ok()) {
            *pending->answer.mutable_infer_response() =
                std::move(pending->response);
          } else {
            pending->answer.set_error_message(status.error_message());
            // The error names its request (Triton's clients match answers
            // to requests by id).
            pending->answer.mutable_infer_response()->set_id(
                pending->request.id());
            pending->answer.mutable_infer_response()->set_model_name(
                pending->request.model_name());
          }
          pending->answered = true;
          step = Next(state.get());
        }
        step.Run();
      });
  reading_ = std::make_shared<Pending>();
  StartRead(&reading_->request);
}

void InferStream::OnWriteDone(bool ok) {
  Step step;
  {
    absl::MutexLock lock(&state_->mu);
    state_->writing = false;
    if (!ok) state_->broken = true;
    state_->order.pop_front();
    step = Next(state_.get());
  }
  step.Run();
}

InferStream::Step InferStream::Next(State* state) {
  Step step;
  if (state->stream == nullptr || state->writing || state->finished) {
    return step;
  }
  if (state->broken) {
    // The client is gone: answers have nowhere to go.
    if (state->reads_done) {
      state->finished = true;
      step.stream = state->stream;
      step.finish =
          grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    }
    return step;
  }
  if (!state->order.empty()) {
    const Pending& next = *state->order.front();
    if (!next.answered) return step;
    state->writing = true;
    step.stream = state->stream;
    step.write = &next.answer;
    return step;
  }
  if (state->reads_done) {
    state->finished = true;
    step.stream = state->stream;
    step.finish = grpc::Status::OK;
  }
  return step;
}

void InferStream::Step::Run() const {
  // The stream lives until OnDone, which comes only after the Finish below
  // and after the write below completes.
  if (write != nullptr) stream->StartWrite(write);
  if (finish.has_value()) stream->Finish(*finish);
}

void InferStream::OnDone() {
  {
    absl::MutexLock lock(&state_->mu);
    state_->stream = nullptr;
  }
  delete this;
}

}  // namespace tessera
