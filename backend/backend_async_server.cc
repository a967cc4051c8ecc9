#include "backend/backend_async_server.h"

#include <deque>
#include <functional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status_util.h"
#include "common/grpc_tuning.h"
#include "common/thread_name.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

using AsyncService = BackendService::AsyncService;

// Arms the first call of one unary method: `request` is the generated
// RequestX of the async service, `handle` the service's method. Blocking
// methods (they wait for proxies) run on a thread of their own each.
template <class Base, class Request, class Response>
void ArmUnary(BackendAsyncServer* server, AsyncService* async,
              grpc::ServerCompletionQueue* cq,
              void (Base::*request)(grpc::ServerContext*, Request*,
                                    grpc::ServerAsyncResponseWriter<Response>*,
                                    grpc::CompletionQueue*,
                                    grpc::ServerCompletionQueue*, void*),
              BackendServiceImpl* service,
              grpc::Status (BackendServiceImpl::*handle)(grpc::ServerContext*,
                                                         const Request*,
                                                         Response*),
              const char* method, bool blocking) {
  ArmAsyncUnary(
      server->calls(), async, cq, request,
      [server, service, handle, method, blocking](
          grpc::ServerContext* context, const Request* r, Response* out,
          typename AsyncUnaryCall<Request, Response>::Finish finish) {
        grpc::Status admitted = server->Admit(*context, method);
        if (!admitted.ok()) {
          finish(admitted);
          return;
        }
        if (!blocking) {
          finish((service->*handle)(nullptr, r, out));
          return;
        }
        server->plan_threads()->Start([service, handle, r, out, finish] {
          finish((service->*handle)(nullptr, r, out));
        });
      });
}

// One Execute stream. The loop thread reads batches and routes them; the
// results come back on proxy reader threads and are written one at a time
// in the order they come. The stream finishes once the frontend has closed
// its side and every batch read has been answered, so no proxy callback
// outlives the call; the call deletes itself when the finish completes.
class ExecuteCall {
 public:
  static void Arm(BackendAsyncServer* server, AsyncService* async,
                  grpc::ServerCompletionQueue* cq,
                  BackendServiceImpl* service) {
    new ExecuteCall(server, async, cq, service);
  }

 private:
  ExecuteCall(BackendAsyncServer* server, AsyncService* async,
              grpc::ServerCompletionQueue* cq, BackendServiceImpl* service)
      : server_(server),
        async_(async),
        cq_(cq),
        service_(service),
        stream_(&context_) {
    server_->calls()->Created();
    async_->RequestExecute(&context_, &stream_, cq_, cq_, &accepted_);
  }
  ~ExecuteCall() { server_->calls()->Destroyed(); }

  void OnAccepted(bool ok) {
    if (!ok) {  // the server is shutting down
      delete this;
      return;
    }
    Arm(server_, async_, cq_, service_);  // the next stream
    grpc::Status admitted = server_->Admit(context_, "Execute");
    if (!admitted.ok()) {
      {
        absl::MutexLock lock(&mu_);
        finishing_ = true;
      }
      stream_.Finish(admitted, &finished_);
      return;
    }
    stream_.Read(&batch_, &read_);
  }

  void OnRead(bool ok) {
    if (!ok) {
      bool finish = false;
      {
        absl::MutexLock lock(&mu_);
        reads_done_ = true;
        finish = ShouldFinishLocked();
      }
      if (finish) stream_.Finish(grpc::Status::OK, &finished_);
      return;
    }
    BatchRequest batch = std::move(batch_);
    batch_.Clear();
    {
      absl::MutexLock lock(&mu_);
      ++outstanding_;
    }
    service_->Route(std::move(batch),
                    [this](BatchResponse r) { Reply(std::move(r)); });
    stream_.Read(&batch_, &read_);
  }

  // From proxy reader threads, or inline from Route.
  void Reply(BatchResponse response) ABSL_LOCKS_EXCLUDED(mu_) {
    const BatchResponse* first = nullptr;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      --outstanding_;
      if (!broken_) writes_.push_back(std::move(response));
      if (writing_) return;  // the write in progress issues it
      if (!writes_.empty()) {
        writing_ = true;
        first = &writes_.front();
      } else {
        finish = ShouldFinishLocked();
      }
    }
    if (first != nullptr) stream_.Write(*first, &written_);
    if (finish) stream_.Finish(grpc::Status::OK, &finished_);
  }

  void OnWritten(bool ok) {
    const BatchResponse* next = nullptr;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      writes_.pop_front();
      if (!ok) {
        broken_ = true;  // the frontend is gone: drop what is left
        writes_.clear();
      }
      if (!writes_.empty()) {
        next = &writes_.front();
      } else {
        writing_ = false;
        finish = ShouldFinishLocked();
      }
    }
    if (next != nullptr) stream_.Write(*next, &written_);
    if (finish) stream_.Finish(grpc::Status::OK, &finished_);
  }

  // Nothing is pending any more: no read, no write, no batch at a proxy.
  void OnFinished(bool /*ok*/) { delete this; }

  bool ShouldFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!reads_done_ || outstanding_ > 0 || writing_ || finishing_) {
      return false;
    }
    finishing_ = true;
    return true;
  }

  BackendAsyncServer* const server_;
  AsyncService* const async_;
  grpc::ServerCompletionQueue* const cq_;
  BackendServiceImpl* const service_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<BatchResponse, BatchRequest> stream_;
  BatchRequest batch_;  // the read in progress
  AsyncOp<ExecuteCall> accepted_{this, &ExecuteCall::OnAccepted};
  AsyncOp<ExecuteCall> read_{this, &ExecuteCall::OnRead};
  AsyncOp<ExecuteCall> written_{this, &ExecuteCall::OnWritten};
  AsyncOp<ExecuteCall> finished_{this, &ExecuteCall::OnFinished};

  absl::Mutex mu_;
  std::deque<BatchResponse> writes_ ABSL_GUARDED_BY(mu_);  // front: writing
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;  // read, not yet answered
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BackendAsyncServer>> BackendAsyncServer::Start(
    const Options& options, BackendServiceImpl* service) {
  std::unique_ptr<BackendAsyncServer> server(new BackendAsyncServer());
  grpc::ServerBuilder builder;
  builder.AddListeningPort(
      options.listen,
      options.tls.ServerCredentials(/*require_client_certificates=*/true),
      &server->port_);
  server->secret_ = options.secret;
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  ApplyTransportTuning(&builder);
  builder.RegisterService(&server->async_);
  server->cq_ = builder.AddCompletionQueue();
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen));
  }

  AsyncService* async = &server->async_;
  grpc::ServerCompletionQueue* cq = server->cq_.get();
  BackendAsyncServer* self = server.get();
  ArmUnary(self, async, cq, &AsyncService::RequestGetNodeInfo, service,
           &BackendServiceImpl::GetNodeInfo, "GetNodeInfo", /*blocking=*/false);
  ArmUnary(self, async, cq, &AsyncService::RequestHealth, service,
           &BackendServiceImpl::Health, "Health", /*blocking=*/false);
  ArmUnary(self, async, cq, &AsyncService::RequestApplyPlan, service,
           &BackendServiceImpl::ApplyPlan, "ApplyPlan", /*blocking=*/true);
  ArmUnary(self, async, cq, &AsyncService::RequestCommitPlan, service,
           &BackendServiceImpl::CommitPlan, "CommitPlan", /*blocking=*/true);
  ExecuteCall::Arm(self, async, cq, service);
  server->loop_ = std::thread([cq, poll = options.poll] {
    NameThisThread("be-loop");
    RunCompletionQueue(cq, poll);
  });
  return server;
}

grpc::Status BackendAsyncServer::Admit(const grpc::ServerContext& context,
                                       const char* method) const {
  if (secret_.empty()) return grpc::Status::OK;
  absl::Status s = secret_.Check(context);
  if (s.ok()) return grpc::Status::OK;
  if (int64_t more = 0; refusal_log_.Allow(&more)) {
    spdlog::warn(
        "refused {} from {}: {}{}", method, context.peer(),
        std::string(s.message()),
        more > 0 ? absl::StrCat(" (", more, " more refusals not logged)") : "");
  }
  return ToGrpcStatus(s);
}

BackendAsyncServer::~BackendAsyncServer() { Shutdown(absl::ZeroDuration()); }

void BackendAsyncServer::Shutdown(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  // Calls still open after the grace period are cancelled; the loop keeps
  // running meanwhile so that they can complete.
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  // Cancelled streams still finish, plan calls still answer from their
  // threads, and waiting calls learn of the shutdown: all on the queue.
  int left = 0;
  const bool idle = calls_.AwaitNone(absl::Seconds(30), &left);
  if (!idle) {
    spdlog::error(
        "{} gRPC call(s) still open 30 s after shutdown (a batch stuck at "
        "a proxy?); leaving them",
        left);
  }
  if (!idle) {
    // Shutting the queue would break the calls still using it.
    plan_threads_.Abandon();
    loop_.detach();
    (void)cq_.release();
    (void)server_.release();
    return;
  }
  plan_threads_.JoinAll();  // their calls finished: they are returning
  cq_->Shutdown();
  if (loop_.joinable()) loop_.join();
}

}  // namespace tessera
