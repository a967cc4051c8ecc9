#include "tools/stream_lane.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tessera {

StreamLane::StreamLane(inference::GRPCInferenceService::Stub* stub,
                       const inference::ModelInferRequest& request,
                       absl::Duration timeout, absl::Time stream_deadline,
                       Report report)
    : timeout_(timeout), report_(std::move(report)), write_(request) {
  (*write_.mutable_parameters())["timeout"].set_int64_param(
      absl::ToInt64Microseconds(timeout));
  context_.set_deadline(absl::ToChronoTime(stream_deadline));
  stub->async()->ModelStreamInfer(&context_, this);
  StartRead(&read_);
  StartCall();
}

StreamLane::~StreamLane() { Wait(absl::InfinitePast()); }

void StreamLane::Send(absl::Time sent) {
  absl::MutexLock lock(&mu_);
  if (closed_ || broken_ || done_) {
    // The stream cannot carry it: it fails at once.
    report_(sent, absl::StatusCode::kUnavailable);
    return;
  }
  queued_.emplace_back(next_id_++, sent);
  if (!writing_) WriteNext();
}

void StreamLane::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  if (!writing_) WriteNext();
}

void StreamLane::WriteNext() {
  if (broken_ || done_) return;
  if (!queued_.empty()) {
    auto [id, sent] = queued_.front();
    queued_.pop_front();
    awaiting_[id] = sent;
    write_.set_id(absl::StrCat(id));
    writing_ = true;
    StartWrite(&write_);
    return;
  }
  if (closed_ && !writes_done_) {
    writes_done_ = true;
    StartWritesDone();
  }
}

void StreamLane::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (!ok) {
    broken_ = true;
    return;
  }
  WriteNext();
}

void StreamLane::OnReadDone(bool ok) {
  if (!ok) return;  // the stream is ending; OnDone follows
  int64_t id = -1;
  std::optional<absl::Time> sent;
  {
    absl::MutexLock lock(&mu_);
    if (absl::SimpleAtoi(read_.infer_response().id(), &id)) {
      auto it = awaiting_.find(id);
      if (it != awaiting_.end()) {
        sent = it->second;
        awaiting_.erase(it);
      }
    }
  }
  if (sent.has_value()) {
    absl::StatusCode code = absl::StatusCode::kOk;
    if (!read_.error_message().empty()) {
      code = absl::StatusCode::kUnknown;
      const auto& parameters = read_.infer_response().parameters();
      auto it = parameters.find("tessera.status_code");
      if (it != parameters.end()) {
        code = static_cast<absl::StatusCode>(it->second.int64_param());
      }
    }
    if (absl::Now() - *sent > timeout_) {
      code = absl::StatusCode::kDeadlineExceeded;
    }
    report_(*sent, code);
  }
  StartRead(&read_);
}

void StreamLane::OnDone(const grpc::Status&) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, sent] : awaiting_) report_(sent, std::nullopt);
  for (const auto& [id, sent] : queued_) report_(sent, std::nullopt);
  awaiting_.clear();
  queued_.clear();
  done_ = true;
}

void StreamLane::Wait(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_; };
  if (mu_.AwaitWithDeadline(absl::Condition(&done), deadline)) return;
  context_.TryCancel();
  // Bounded: gRPC ends a cancelled call promptly and always calls OnDone.
  mu_.Await(absl::Condition(&done));
}

}  // namespace tessera
