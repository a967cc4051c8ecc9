#include "frontend/backend_client.h"

#include <chrono>

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

void BackendClient::Send(BatchRequest batch, Callback done) {
  // Callbacks never run under write_mu_: they may send again.
  Callback failed;
  absl::Status failure;
  {
    absl::MutexLock write_lock(&write_mu_);
    uint64_t id = 0;
    {
      absl::MutexLock lock(&mu_);
      if (connected_ && stream_ != nullptr) {
        id = next_id_++;
        pending_[id] = std::move(done);
      }
    }
    if (id == 0) {
      failed = std::move(done);
      failure = absl::UnavailableError(absl::StrCat(
          "backend '", id_, "' at ", address_, " is not connected"));
    } else {
      batch.set_batch_id(id);
      if (!stream_->Write(batch)) {
        // The stream broke; StreamLoop fails whatever is still pending
        // unless we take this batch back first.
        absl::MutexLock lock(&mu_);
        auto it = pending_.find(id);
        if (it != pending_.end()) {
          failed = std::move(it->second);
          pending_.erase(it);
          failure = absl::UnavailableError(absl::StrCat(
              "stream to backend '", id_, "' broke while sending"));
        }
      }
    }
  }
  if (failed) failed(failure, BatchResponse());
}

void BackendClient::StreamLoop() {
  absl::Duration backoff = absl::Milliseconds(100);
  while (true) {
    grpc::ClientContext* context;
    {
      absl::MutexLock write_lock(&write_mu_);
      absl::MutexLock lock(&mu_);
      if (shutdown_) return;
      context_ = std::make_unique<grpc::ClientContext>();
      context = context_.get();
      stream_ = stub_->Execute(context);
      connected_ = true;
    }
    BatchResponse response;
    bool got_any = false;
    while (stream_->Read(&response)) {
      got_any = true;
      Callback cb;
      {
        absl::MutexLock lock(&mu_);
        auto it = pending_.find(response.batch_id());
        if (it == pending_.end()) continue;
        cb = std::move(it->second);
        pending_.erase(it);
      }
      absl::Status status = FromStatusProto(response.status());
      cb(status, std::move(response));
      response = BatchResponse();
    }
    {
      absl::MutexLock lock(&mu_);
      connected_ = false;
    }
    FailPending(absl::UnavailableError(
        absl::StrCat("lost the stream to backend '", id_, "' at ", address_)));
    {
      absl::MutexLock write_lock(&write_mu_);
      grpc::Status status = stream_->Finish();
      stream_.reset();
      absl::MutexLock lock(&mu_);
      context_.reset();
      if (shutdown_) return;
      if (got_any) backoff = absl::Milliseconds(100);
      spdlog::debug("stream to backend {} ended: {}", id_,
                    status.error_message());
    }
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
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
  FailPending(absl::UnavailableError("frontend is shutting down"));
}

}  // namespace tessera
