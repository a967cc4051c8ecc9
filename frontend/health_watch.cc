#include "frontend/health_watch.h"

namespace tessera {

void HealthWatch::Arm(HealthService* service,
                      HealthService::AsyncService* async,
                      grpc::ServerCompletionQueue* cq, AsyncCallCount* calls) {
  new HealthWatch(service, async, cq, calls);
}

HealthWatch::HealthWatch(HealthService* service,
                         HealthService::AsyncService* async,
                         grpc::ServerCompletionQueue* cq, AsyncCallCount* calls)
    : service_(service), async_(async), cq_(cq), calls_(calls) {
  calls_->Created();
  // gRPC delivers this tag only for a call that started (and then always).
  context_.AsyncNotifyWhenDone(&done_);
  async_->RequestWatch(&context_, &request_, &writer_, cq_, cq_, &accepted_);
}

HealthWatch::~HealthWatch() { calls_->Destroyed(); }

void HealthWatch::OnAccepted(bool ok) {
  if (!ok) {  // the server is shutting down; no call started
    delete this;
    return;
  }
  Arm(service_, async_, cq_, calls_);
  {
    absl::MutexLock lock(&mu_);
    pending_ = 1;  // the done notification
  }
  service_->AddWatch(this, request_.service());
}

void HealthWatch::Send(ServingStatus status, bool last) {
  absl::MutexLock lock(&mu_);
  wanted_ = status;
  last_ = last_ || last;
  Next();
}

void HealthWatch::Next() {
  // The asynchronous API completes operations on the queue, never inline:
  // starting them under the lock is safe.
  if (broken_ || writing_ || finishing_) return;
  if (wanted_.has_value() && wanted_ != sent_) {
    response_.set_status(*wanted_);
    sent_ = wanted_;
    writing_ = true;
    ++pending_;
    writer_.Write(response_, &written_);
    return;
  }
  if (last_) {
    finishing_ = true;
    ++pending_;
    writer_.Finish(grpc::Status::OK, &finished_);
  }
}

bool HealthWatch::Completed() { return --pending_ == 0; }

void HealthWatch::OnWritten(bool ok) {
  bool gone;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) broken_ = true;
    Next();
    gone = Completed();
  }
  if (gone) delete this;
}

void HealthWatch::OnFinished(bool) {
  bool gone;
  {
    absl::MutexLock lock(&mu_);
    gone = Completed();
  }
  if (gone) delete this;
}

void HealthWatch::OnDone(bool) {
  // No Send after this: the service calls Send only under its lock, on
  // the watches it holds.
  service_->RemoveWatch(this);
  bool gone;
  {
    absl::MutexLock lock(&mu_);
    broken_ = true;
    gone = Completed();
  }
  if (gone) delete this;
}

}  // namespace tessera
