#include "frontend/admission_control.h"

#include "absl/strings/str_cat.h"

namespace tessera {

AdmissionControl::Ticket& AdmissionControl::Ticket::operator=(
    Ticket&& other) noexcept {
  if (this != &other) {
    Reset();
    owner_ = other.owner_;
    model_ = std::move(other.model_);
    bytes_ = other.bytes_;
    other.owner_ = nullptr;
  }
  return *this;
}

void AdmissionControl::Ticket::Reset() {
  if (owner_ == nullptr) return;
  owner_->Release(model_, bytes_);
  owner_ = nullptr;
}

absl::Status AdmissionControl::CheckBacklog(absl::Duration slo,
                                            absl::string_view client_model,
                                            absl::Time deadline,
                                            absl::Time now) {
  if (backlog_ == nullptr || options_.max_backlog_slo_fraction <= 0 ||
      slo <= absl::ZeroDuration()) {
    return absl::OkStatus();
  }
  const absl::Duration limit = slo * options_.max_backlog_slo_fraction;
  // Every call's time-to-deadline feeds the estimate, refused or not.
  const absl::Duration waited = waits_.Observe(client_model, deadline, now);
  if (waited < limit || backlog_->Bound() < limit) return absl::OkStatus();
  {
    absl::MutexLock lock(&mu_);
    ++refused_;
    ++refused_for_backlog_;
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("the frontend is overloaded: this call waited about ",
                   absl::ToInt64Milliseconds(waited),
                   " ms before the frontend could "
                   "take it (limit ",
                   absl::ToInt64Milliseconds(limit),
                   " ms, a share of the model's SLO); retry later"));
}

absl::Status AdmissionControl::CheckQueue(absl::Duration slo,
                                          absl::Duration queue_wait) {
  if (options_.max_queue_slo_fraction <= 0 || slo <= absl::ZeroDuration()) {
    return absl::OkStatus();
  }
  const absl::Duration limit = slo * options_.max_queue_slo_fraction;
  if (queue_wait < limit) return absl::OkStatus();
  {
    absl::MutexLock lock(&mu_);
    ++refused_;
    ++refused_for_queue_;
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("the model's queue is full: the calls ahead have waited ",
                   absl::ToInt64Milliseconds(queue_wait), " ms (limit ",
                   absl::ToInt64Milliseconds(limit),
                   " ms, a share of the model's SLO); retry later"));
}

absl::StatusOr<AdmissionControl::Ticket> AdmissionControl::Admit(
    absl::string_view model, int64_t request_bytes) {
  const int64_t bytes = request_bytes + options_.per_request_overhead_bytes;
  absl::MutexLock lock(&mu_);
  auto refuse = [&](absl::string_view what, int64_t held, int64_t limit)
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                      ++refused_;
                      return absl::ResourceExhaustedError(
                          absl::StrCat("the frontend holds ", held, " ", what,
                                       " (limit ", limit, "); retry later"));
                    };
  if (options_.max_requests > 0 && requests_ >= options_.max_requests) {
    return refuse("calls", requests_, options_.max_requests);
  }
  if (options_.max_bytes > 0 && bytes_ + bytes > options_.max_bytes) {
    if (bytes > options_.max_bytes) {
      ++refused_;
      return absl::ResourceExhaustedError(
          absl::StrCat("request of ", request_bytes,
                       " bytes exceeds the frontend's byte budget (",
                       options_.max_bytes, ")"));
    }
    return refuse("request bytes", bytes_, options_.max_bytes);
  }
  auto it = per_model_.find(model);
  const int64_t held = it == per_model_.end() ? 0 : it->second;
  if (options_.max_requests_per_model > 0 &&
      held >= options_.max_requests_per_model) {
    return refuse("calls of this model", held, options_.max_requests_per_model);
  }
  if (it == per_model_.end()) {
    it = per_model_.emplace(std::string(model), 0).first;
  }
  ++it->second;
  ++requests_;
  bytes_ += bytes;
  return Ticket(this, it->first, bytes);
}

void AdmissionControl::Release(const std::string& model, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  --requests_;
  bytes_ -= bytes;
  // Entries stay (one per model of the repository: admission follows
  // version resolution), so the data path does not allocate for them.
  auto it = per_model_.find(model);
  if (it != per_model_.end()) --it->second;
}

AdmissionControl::Usage AdmissionControl::usage() const {
  absl::MutexLock lock(&mu_);
  Usage usage;
  usage.requests = requests_;
  usage.bytes = bytes_;
  for (const auto& [model, held] : per_model_) {
    if (held > 0) usage.requests_per_model[model] = held;
  }
  usage.refused = refused_;
  usage.refused_for_backlog = refused_for_backlog_;
  usage.refused_for_queue = refused_for_queue_;
  return usage;
}

}  // namespace tessera
