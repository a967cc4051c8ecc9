#include "backend/backend_async_server.h"

#include <deque>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_tuning.h"
#include "spdlog/spdlog.h"

namespace tessera {
namespace {

using AsyncService = BackendService::AsyncService;

// One unary call: accepts the next call of its method as soon as it has
// one, runs the handler (inline, or on a thread of its own for calls that
// block) and finishes.
template <class Request, class Response>
class UnaryCall final : public BackendAsyncServer::Tag {
 public:
  using Requester = std::function<void(
      grpc::ServerContext*, Request*,
      grpc::ServerAsyncResponseWriter<Response>*, void* tag)>;
  using Handler = std::function<grpc::Status(const Request&, Response*)>;

  // Arms one call; it re-arms itself.
  static void Arm(BackendAsyncServer* server, Requester requester,
                  Handler handler, bool blocking) {
    new UnaryCall(server, std::move(requester), std::move(handler), blocking);
  }

  void Proceed(bool ok) override {
    if (finishing_ || !ok) {  // answered, or the server is shutting down
      delete this;
      return;
    }
    Arm(server_, requester_, handler_, blocking_);
    finishing_ = true;
    if (!blocking_) {
      writer_.Finish(response_, handler_(request_, &response_), this);
      return;
    }
    std::thread([this] {
      writer_.Finish(response_, handler_(request_, &response_), this);
    }).detach();
  }

  ~UnaryCall() override { server_->CallDestroyed(); }

 private:
  UnaryCall(BackendAsyncServer* server, Requester requester, Handler handler,
            bool blocking)
      : server_(server),
        requester_(std::move(requester)),
        handler_(std::move(handler)),
        blocking_(blocking),
        writer_(&context_) {
    server_->CallCreated();
    requester_(&context_, &request_, &writer_, this);
  }

  BackendAsyncServer* const server_;
  const Requester requester_;
  const Handler handler_;
  const bool blocking_;
  grpc::ServerContext context_;
  Request request_;
  Response response_;
  grpc::ServerAsyncResponseWriter<Response> writer_;
  bool finishing_ = false;
};

// Arms the first call of one unary method: `request` is the generated
// RequestX of the async service (declared in one of its bases), `handle`
// the service's method.
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
              bool blocking) {
  UnaryCall<Request, Response>::Arm(
      server,
      [async, cq, request](grpc::ServerContext* c, Request* r,
                           grpc::ServerAsyncResponseWriter<Response>* w,
                           void* tag) {
        (static_cast<Base*>(async)->*request)(c, r, w, cq, cq, tag);
      },
      [service, handle](const Request& r, Response* out) {
        return (service->*handle)(nullptr, &r, out);
      },
      blocking);
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
  // Routes a completion to one of this call's handlers.
  class Op final : public BackendAsyncServer::Tag {
   public:
    Op(ExecuteCall* call, void (ExecuteCall::*fn)(bool))
        : call_(call), fn_(fn) {}
    void Proceed(bool ok) override { (call_->*fn_)(ok); }

   private:
    ExecuteCall* const call_;
    void (ExecuteCall::*const fn_)(bool);
  };

  ExecuteCall(BackendAsyncServer* server, AsyncService* async,
              grpc::ServerCompletionQueue* cq, BackendServiceImpl* service)
      : server_(server),
        async_(async),
        cq_(cq),
        service_(service),
        stream_(&context_) {
    server_->CallCreated();
    async_->RequestExecute(&context_, &stream_, cq_, cq_, &accepted_);
  }
  ~ExecuteCall() { server_->CallDestroyed(); }

  void OnAccepted(bool ok) {
    if (!ok) {  // the server is shutting down
      delete this;
      return;
    }
    Arm(server_, async_, cq_, service_);  // the next stream
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
    stream_.Read(&batch_, &read_);
    service_->Route(std::move(batch),
                    [this](BatchResponse r) { Reply(std::move(r)); });
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
  Op accepted_{this, &ExecuteCall::OnAccepted};
  Op read_{this, &ExecuteCall::OnRead};
  Op written_{this, &ExecuteCall::OnWritten};
  Op finished_{this, &ExecuteCall::OnFinished};

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
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(),
                           &server->port_);
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
           &BackendServiceImpl::GetNodeInfo, /*blocking=*/false);
  ArmUnary(self, async, cq, &AsyncService::RequestHealth, service,
           &BackendServiceImpl::Health, /*blocking=*/false);
  ArmUnary(self, async, cq, &AsyncService::RequestApplyPlan, service,
           &BackendServiceImpl::ApplyPlan, /*blocking=*/true);
  ArmUnary(self, async, cq, &AsyncService::RequestCommitPlan, service,
           &BackendServiceImpl::CommitPlan, /*blocking=*/true);
  ExecuteCall::Arm(self, async, cq, service);
  server->loop_ = std::thread([self] { self->Loop(); });
  return server;
}

BackendAsyncServer::~BackendAsyncServer() { Shutdown(absl::ZeroDuration()); }

void BackendAsyncServer::Loop() {
  void* tag = nullptr;
  bool ok = false;
  while (cq_->Next(&tag, &ok)) static_cast<Tag*>(tag)->Proceed(ok);
}

void BackendAsyncServer::CallCreated() {
  absl::MutexLock lock(&mu_);
  ++live_calls_;
}

void BackendAsyncServer::CallDestroyed() {
  absl::MutexLock lock(&mu_);
  --live_calls_;
}

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
  bool idle = false;
  {
    absl::MutexLock lock(&mu_);
    auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return live_calls_ == 0;
    };
    idle = mu_.AwaitWithTimeout(absl::Condition(&none), absl::Seconds(30));
    if (!idle) {
      spdlog::error(
          "{} gRPC call(s) still open 30 s after shutdown (a batch stuck at "
          "a proxy?); leaving them",
          live_calls_);
    }
  }
  if (!idle) {
    // Shutting the queue would break the calls still using it.
    loop_.detach();
    (void)cq_.release();
    (void)server_.release();
    return;
  }
  cq_->Shutdown();
  if (loop_.joinable()) loop_.join();
}

}  // namespace tessera
