#pragma once

#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/backlog_bound.h"
#include "common/poll_governor.h"
#include "grpcpp/grpcpp.h"

namespace tessera {

// Building blocks for serving on gRPC's asynchronous API from one
// event-loop thread (backend and frontend): with one thread polling one
// completion queue, no event is handed from the thread that polled it to
// another (docs/benchmarks.md).

// A pending operation on a completion queue; the loop calls Proceed with
// the operation's result.
class AsyncTag {
 public:
  virtual ~AsyncTag() = default;
  virtual void Proceed(bool ok) = 0;
};

// Routes a completion to a member function of `Owner`.
template <class Owner>
class AsyncOp final : public AsyncTag {
 public:
  AsyncOp(Owner* owner, void (Owner::*fn)(bool)) : owner_(owner), fn_(fn) {}
  void Proceed(bool ok) override { (owner_->*fn_)(ok); }

 private:
  Owner* const owner_;
  void (Owner::*const fn_)(bool);
};

// Polls `cq` and runs each completion until the queue is shut down and
// drained. By default it sleeps in the queue at once; with a poll window
// it first polls the queue without blocking (yielding the core between
// tries), as `PollGovernor` allows, which saves the wake-up of a sleeping
// thread (on a VM, an idle core's exit from the hypervisor's halt: about
// 100 us here, docs/benchmarks.md). A batch in flight needs no rule of its
// own: its write completes on the queue right after it is sent, so the
// loop polls for the result.
// With `backlog`, the loop marks every moment it finds `cq` empty and every
// wake-up from a wait on it (BacklogBound::MarkEmpty); it then looks at the
// queue without blocking before each sleep. With `defer_writes` the loop
// owns a DeferredWrites for its thread and flushes it when the queue runs
// dry and every DeferredWrites::kMaxEventsHeld events; without, writers on
// it find none and write at once.
void RunCompletionQueue(grpc::CompletionQueue* cq,
                        const PollOptions& poll = PollOptions(),
                        BacklogBound* backlog = nullptr,
                        bool defer_writes = false);

// True when gRPC polls with epoll1 (the default on Linux, unless the
// GRPC_POLL_STRATEGY environment variable names another first): one epoll
// set for the whole process, so a thread polling any completion queue
// handles every socket's events, those of other servers included. With
// another poller, a server needs a thread polling its own queue.
bool GrpcPollsOneEpollSet();

// Counts the call objects alive on a completion queue: the queue may shut
// down only when none of them can start another operation on it.
class AsyncCallCount {
 public:
  void Created() ABSL_LOCKS_EXCLUDED(mu_);
  void Destroyed() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until no call is alive; false (and the number left in `*left`)
  // after `timeout`.
  bool AwaitNone(absl::Duration timeout, int* left) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Mutex mu_;
  int live_ ABSL_GUARDED_BY(mu_) = 0;
};

// Finishes a unary call with its status (exactly once, from any thread).
using UnaryFinish = std::function<void(const grpc::Status&)>;

// One unary call of an asynchronous service. It accepts the next call of
// its method as soon as it has one, hands the request to its handler on the
// loop thread and finishes when the handler calls `finish` (exactly once,
// from any thread; the request and response stay valid until then).
template <class Request, class Response>
class AsyncUnaryCall final : public AsyncTag {
 public:
  using Finish = UnaryFinish;
  // The service's generated RequestX bound to a queue.
  using Requester = std::function<void(
      grpc::ServerContext*, Request*,
      grpc::ServerAsyncResponseWriter<Response>*, void* tag)>;
  using Handler = std::function<void(grpc::ServerContext*, const Request*,
                                     Response*, Finish)>;

  // Arms one call; it re-arms itself when it is accepted.
  static void Arm(AsyncCallCount* count, Requester requester, Handler handler) {
    new AsyncUnaryCall(count, std::move(requester), std::move(handler));
  }

  void Proceed(bool ok) override {
    if (finishing_ || !ok) {  // answered, or the server is shutting down
      delete this;
      return;
    }
    Arm(count_, requester_, handler_);
    finishing_ = true;
    handler_(&context_, &request_, &response_,
             [this](const grpc::Status& status) {
               writer_.Finish(response_, status, this);
             });
  }

  ~AsyncUnaryCall() override { count_->Destroyed(); }

 private:
  AsyncUnaryCall(AsyncCallCount* count, Requester requester, Handler handler)
      : count_(count),
        requester_(std::move(requester)),
        handler_(std::move(handler)),
        writer_(&context_) {
    count_->Created();
    requester_(&context_, &request_, &writer_, this);
  }

  AsyncCallCount* const count_;
  const Requester requester_;
  const Handler handler_;
  grpc::ServerContext context_;
  Request request_;
  Response response_;
  grpc::ServerAsyncResponseWriter<Response> writer_;
  bool finishing_ = false;
};

// Arms the first call of one unary method of `async` on `cq`: `request` is
// the generated RequestX (declared in one of the service's bases).
template <class Base, class Service, class Request, class Response>
void ArmAsyncUnary(
    AsyncCallCount* count, Service* async, grpc::ServerCompletionQueue* cq,
    void (Base::*request)(grpc::ServerContext*, Request*,
                          grpc::ServerAsyncResponseWriter<Response>*,
                          grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                          void*),
    typename AsyncUnaryCall<Request, Response>::Handler handler) {
  AsyncUnaryCall<Request, Response>::Arm(
      count,
      [async, cq, request](grpc::ServerContext* c, Request* r,
                           grpc::ServerAsyncResponseWriter<Response>* w,
                           void* tag) {
        (static_cast<Base*>(async)->*request)(c, r, w, cq, cq, tag);
      },
      std::move(handler));
}

}  // namespace tessera
