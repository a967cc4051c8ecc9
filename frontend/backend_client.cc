#include "frontend/backend_client.h"

#include <chrono>
#include <deque>

#include "absl/strings/str_cat.h"
#include "common/async_call.h"
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

BackendClient::BackendClient(std::string id, std::string address,
                             grpc::CompletionQueue* cq, Security security)
    : id_(std::move(id)),
      address_(std::move(address)),
      secret_(std::move(security.secret)),
      cq_(cq) {
  if (cq_ == nullptr) {
    own_cq_ = std::make_unique<grpc::CompletionQueue>();
    cq_ = own_cq_.get();
    own_loop_ = std::thread([cq = cq_] { RunCompletionQueue(cq); });
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  ApplyTransportTuning(&args);
  // Reconnect quickly after a backend restarts.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  channel_ = grpc::CreateCustomChannel(address_,
                                       security.credentials != nullptr
                                           ? security.credentials
                                           : grpc::InsecureChannelCredentials(),
                                       args);
  stub_ = BackendService::NewStub(channel_);
  thread_ = std::thread([this] { StreamLoop(); });
}

BackendClient::~BackendClient() { Shutdown(); }

absl::StatusOr<NodeInfo> BackendClient::GetNodeInfo(absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  secret_.Attach(&context);
  NodeInfo info;
  grpc::Status s = stub_->GetNodeInfo(&context, GetNodeInfoRequest(), &info);
  if (!s.ok()) return FromGrpcStatus(s);
  return info;
}

absl::StatusOr<ApplyPlanResponse> BackendClient::ApplyPlan(
    const Plan& plan, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  secret_.Attach(&context);
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
  secret_.Attach(&context);
  CommitPlanRequest request;
  request.set_epoch(epoch);
  CommitPlanResponse response;
  return FromGrpcStatus(stub_->CommitPlan(&context, request, &response));
}

absl::StatusOr<HealthResponse> BackendClient::Health(
    const HealthRequest& request, absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineIn(timeout));
  secret_.Attach(&context);
  HealthResponse response;
  grpc::Status s = stub_->Health(&context, request, &response);
  if (!s.ok()) return FromGrpcStatus(s);
  return response;
}

// One Execute call on the asynchronous API. Batches are written from the
// threads that form them, queued and issued one at a time (one write may
// be outstanding); the call's completions (start, reads, writes, the end)
// run on the thread that polls the client's completion queue. When the call
// breaks, it is cancelled, and once no read or write is outstanding it
// finishes; the finish is its last event.
class BackendClient::ExecuteStream {
 public:
  explicit ExecuteStream(BackendClient* client) : client_(client) {
    client_->secret_.Attach(&context_);
  }

  void Start(BackendService::Stub* stub, grpc::CompletionQueue* cq) {
    rw_ = stub->PrepareAsyncExecute(&context_, cq);
    rw_->StartCall(&started_);
  }

  // Queues `batch` for writing; false (and `batch` untouched) if the stream
  // is broken. Never blocks on the network.
  bool Write(BatchRequest&& batch) ABSL_LOCKS_EXCLUDED(mu_) {
    const BatchRequest* first = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (broken_) return false;
      writes_.push_back(std::move(batch));
      if (writing_ || starting_) return true;  // issued when it may be
      writing_ = true;
      first = &writes_.front();
    }
    rw_->Write(*first, &written_);
    return true;
  }

  // Ends the call (from any thread); the client hears of it in StreamDone.
  void Cancel() { context_.TryCancel(); }
  bool read_any() const { return read_any_; }

 private:
  void OnStarted(bool ok) {
    const BatchRequest* first = nullptr;
    bool read = false;
    {
      absl::MutexLock lock(&mu_);
      starting_ = false;
      if (!ok) broken_ = true;
      read = reading_ = !broken_;
      if (!broken_ && !writes_.empty()) {
        writing_ = true;
        first = &writes_.front();
      }
    }
    if (read) rw_->Read(&response_, &read_);
    if (first != nullptr) rw_->Write(*first, &written_);
    if (!read) Break();
  }

  void OnRead(bool ok) {
    if (!ok) {
      {
        absl::MutexLock lock(&mu_);
        reading_ = false;
      }
      Break();
      return;
    }
    read_any_ = true;
    BatchResponse response = std::move(response_);
    response_.Clear();
    client_->Deliver(std::move(response));
    rw_->Read(&response_, &read_);
  }

  void OnWritten(bool ok) {
    const BatchRequest* next = nullptr;
    {
      absl::MutexLock lock(&mu_);
      writes_.pop_front();
      if (!ok) broken_ = true;
      if (broken_) writes_.clear();  // their batches fail with the stream
      if (!writes_.empty()) {
        next = &writes_.front();
      } else {
        writing_ = false;
      }
    }
    if (next != nullptr) rw_->Write(*next, &written_);
    if (!ok) {
      Break();
    } else {
      MaybeFinish();
    }
  }

  // The last event: after StreamDone the client may destroy this stream.
  void OnFinished(bool) { client_->StreamDone(status_); }

  // No write starts from now on; the outstanding read and write complete.
  void Break() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
    }
    context_.TryCancel();
    MaybeFinish();
  }

  void MaybeFinish() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (!broken_ || starting_ || reading_ || writing_ || finishing_) return;
      finishing_ = true;
    }
    rw_->Finish(&status_, &finished_);
  }

  BackendClient* const client_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<BatchRequest, BatchResponse>>
      rw_;
  BatchResponse response_;  // the read in progress (loop thread only)
  bool read_any_ = false;   // loop thread only, read after StreamDone
  grpc::Status status_;
  AsyncOp<ExecuteStream> started_{this, &ExecuteStream::OnStarted};
  AsyncOp<ExecuteStream> read_{this, &ExecuteStream::OnRead};
  AsyncOp<ExecuteStream> written_{this, &ExecuteStream::OnWritten};
  AsyncOp<ExecuteStream> finished_{this, &ExecuteStream::OnFinished};
  absl::Mutex mu_;
  std::deque<BatchRequest> writes_ ABSL_GUARDED_BY(mu_);  // front: writing
  bool starting_ ABSL_GUARDED_BY(mu_) = true;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
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
    stream->Start(stub_.get(), cq_);
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
  if (stream != nullptr) stream->Cancel();
  stream.reset();
  if (thread_.joinable()) thread_.join();
  FailPending(absl::UnavailableError("frontend is shutting down"));
  if (own_cq_ != nullptr) {
    own_cq_->Shutdown();  // the last stream is over: nothing is pending
    if (own_loop_.joinable()) own_loop_.join();
  }
}

}  // namespace tessera
