#include "frontend/backend_client.h"

#include <atomic>
#include <chrono>
#include <deque>

#include "absl/strings/str_cat.h"
#include "common/grpc_status_util.h"
#include "common/grpc_tuning.h"
#include "grpcpp/grpcpp.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

std::chrono::system_clock::time_point DeadlineIn(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

}  // namespace

BackendClient::BackendClient(std::string id, std::string address)
    : id_(std::move(id)), address_(std::move(address)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  ApplyTransportTuning(&args);
  // Reconnect quickly after a backend restarts.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  channel_ = grpc::CreateCustomChannel(
      address_, grpc::InsecureChannelCredentials(), args);
  stub_ = BackendService::NewStub(channel_);
  thread_ = std::thread([this] { StreamLoop(); });
}

BackendClient::~BackendClient() { Shutdown(); }

absl::StatusOr<NodeInfo> BackendClient::GetNodeInfo(absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  NodeInfo info;
  grpc::Status s = stub_->GetNodeInfo(&context, GetNodeInfoRequest(), &info);
  if (!s.ok()) return FromGrpcStatus(s);
  return info;
}

absl::StatusOr<ApplyPlanResponse> BackendClient::ApplyPlan(
    const Plan& plan, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  ApplyPlanRequest request;
  *request.mutable_plan() = plan;
  ApplyPlanResponse response;
  grpc::Status s = stub_->ApplyPlan(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

absl::Status BackendClient::CommitPlan(int64_t epoch, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  CommitPlanRequest request;
  request.set_epoch(epoch);
  CommitPlanResponse response;
  return FromGrpcStatus(stub_->CommitPlan(&context, request, &response));
}

absl::StatusOr<HealthResponse> BackendClient::Health(absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  HealthResponse response;
  grpc::Status s = stub_->Health(&context, HealthRequest(), &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

// One Execute call. Writes are queued and issued one at a time (the
// callback API allows one outstanding write); a hold keeps the call open
// while batches may still be written from outside its reactions. The hold
// is released once the stream is broken and no write is being issued, so
// no StartWrite can race with the end of the call.
class BackendClient::ExecuteStream final
    : public grpc::ClientBidiReactor<BatchRequest, BatchResponse> {
 public:
  explicit ExecuteStream(BackendClient* client) : client_(client) {}

  void Start(BackendService::Stub* stub) {
    stub->async()->Execute(&context_, this);
    AddHold();
    StartRead(&response_);
    StartCall();
  }

  // Queues `batch` for writing; false (and `batch` untouched) if the stream
  // is broken. Never blocks on the network.
  bool Write(BatchRequest&& batch) ABSL_LOCKS_EXCLUDED(mu_) {
    const BatchRequest* first = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (broken_) return false;
      writes_.push_back(std::move(batch));
      if (writing_) return true;  // the write in progress issues it
      writing_ = true;
      first = &writes_.front();
    }
    StartWrite(first);
    return true;
  }

  void Cancel() { context_.TryCancel(); }
  bool read_any() const { return read_any_.load(); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      BreakAndMaybeRelease();
      return;
    }
    read_any_.store(true);
    BatchResponse response = std::move(response_);
    response_.Clear();
    StartRead(&response_);
    client_->Deliver(std::move(response));
  }

  void OnWriteDone(bool ok) override {
    const BatchRequest* next = nullptr;
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      writes_.pop_front();
      if (!ok) {
        broken_ = true;
        writes_.clear();  // their batches fail with the stream
      }
      if (!broken_ && !writes_.empty()) {
        next = &writes_.front();
      } else {
        writing_ = false;
        release = ReleaseHoldLocked();
      }
    }
    if (!ok) Cancel();  // ends the read side too
    if (next != nullptr) StartWrite(next);
    if (release) RemoveHold();
  }

  // The last reaction: after StreamDone the loop may destroy this stream.
  void OnDone(const grpc::Status& status) override {
    client_->StreamDone(status);
  }

 private:
  void BreakAndMaybeRelease() ABSL_LOCKS_EXCLUDED(mu_) {
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      release = ReleaseHoldLocked();
    }
    if (release) RemoveHold();
  }

  bool ReleaseHoldLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!broken_ || writing_ || hold_released_) return false;
    hold_released_ = true;
    return true;
  }

  BackendClient* const client_;
  grpc::ClientContext context_;
  BatchResponse response_;  // the read in progress
  std::atomic<bool> read_any_{false};
  absl::Mutex mu_;
  std::deque<BatchRequest> writes_ ABSL_GUARDED_BY(mu_);  // front: writing
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
};

void BackendClient::Send(BatchRequest batch, Callback done) {
  std::shared_ptr<ExecuteStream> stream;
  uint64_t id = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stream_ != nullptr && !stream_done_) {
      stream = stream_;
      id = next_id_++;
      pending_[id] = std::move(done);
    }
  }
  if (stream == nullptr) {
    done(absl::UnavailableError(absl::StrCat("backend '", id_, "' at ",
                                             address_, " is not connected")),
         BatchResponse());
    return;
  }
  batch.set_batch_id(id);
  if (stream->Write(std::move(batch))) return;
  // The stream broke; StreamLoop fails whatever is still pending unless we
  // take this batch back first.
  Callback failed;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    failed = std::move(it->second);
    pending_.erase(it);
  }
  failed(absl::UnavailableError(
             absl::StrCat("stream to backend '", id_, "' broke while sending")),
         BatchResponse());
}

void BackendClient::Deliver(BatchResponse response) {
  Callback cb;
  {
    absl::MutexLock lock(&mu_);
    auto it = pending_.find(response.batch_id());
    if (it == pending_.end()) return;
    cb = std::move(it->second);
    pending_.erase(it);
  }
  absl::Status status = FromStatusProto(response.status());
  cb(std::move(status), std::move(response));
}

void BackendClient::StreamDone(const grpc::Status& status) {
  absl::MutexLock lock(&mu_);
  stream_done_ = true;
  stream_status_ = status;
}

void BackendClient::StreamLoop() {
  absl::Duration backoff = absl::Milliseconds(100);
  while (true) {
    auto stream = std::make_shared<ExecuteStream>(this);
    {
      absl::MutexLock lock(&mu_);
      if (shutdown_) return;
      stream_ = stream;
      stream_done_ = false;
    }
    stream->Start(stub_.get());
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&stream_done_));
      status = stream_status_;
      stream_.reset();
    }
    if (stream->read_any()) backoff = absl::Milliseconds(100);
    // Send may still hold a reference for a moment; the stream's call is
    // over, so releasing it there is safe.
    stream.reset();
    FailPending(absl::UnavailableError(
        absl::StrCat("lost the stream to backend '", id_, "' at ", address_)));
    {
      absl::MutexLock lock(&mu_);
      if (shutdown_) return;
    }
    spdlog::debug("stream to backend {} ended: {}", id_,
                  status.error_message());
    // Wait for the channel to come back (or the backoff to pass).
    channel_->WaitForConnected(DeadlineIn(backoff));
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
}

void BackendClient::FailPending(const absl::Status& status) {
  std::map<uint64_t, Callback> pending;
  {
    absl::MutexLock lock(&mu_);
    pending.swap(pending_);
  }
  for (auto& [id, cb] : pending) cb(status, BatchResponse());
}

void BackendClient::Shutdown() {
  std::shared_ptr<ExecuteStream> stream;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
    stream = stream_;
  }
  // Outside mu_: cancelling may run the stream's reactions inline.
  if (stream != nullptr) stream->Cancel();
  stream.reset();
  if (thread_.joinable()) thread_.join();
  FailPending(absl::UnavailableError("frontend is shutting down"));
}

}  // namespace tessera
