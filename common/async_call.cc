#include "common/async_call.h"

#include <sched.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/deferred_writes.h"

namespace tessera {

void RunCompletionQueue(grpc::CompletionQueue* cq, const PollOptions& poll,
                        BacklogBound* backlog, bool defer_writes) {
  void* tag = nullptr;
  bool ok = false;
  const gpr_timespec past = gpr_time_0(GPR_CLOCK_MONOTONIC);  // don't block
  const gpr_timespec never = gpr_inf_future(GPR_CLOCK_MONOTONIC);
  if (poll.window <= absl::ZeroDuration() && backlog == nullptr &&
      !defer_writes) {
    while (cq->Next(&tag, &ok)) static_cast<AsyncTag*>(tag)->Proceed(ok);
    return;
  }
  DeferredWrites deferred;
  DeferredWrites::Scope scope(defer_writes ? &deferred : nullptr);
  // Looks at the queue without blocking; when it is empty, marks that and
  // flushes the deferred writes (their completions may arrive at once).
  // TIMEOUT only when the queue is empty and nothing is deferred.
  auto next_queued = [&]() {
    while (true) {
      const grpc::CompletionQueue::NextStatus next =
          cq->AsyncNext(&tag, &ok, past);
      if (next != grpc::CompletionQueue::TIMEOUT) return next;
      if (backlog != nullptr) backlog->MarkEmpty();
      if (deferred.empty()) return next;
      deferred.FlushAll();
    }
  };
  auto proceed = [&] {
    static_cast<AsyncTag*>(tag)->Proceed(ok);
    deferred.CountEvent();
  };
  if (poll.window <= absl::ZeroDuration()) {
    while (true) {
      grpc::CompletionQueue::NextStatus next = next_queued();
      if (next == grpc::CompletionQueue::TIMEOUT) {
        next = cq->AsyncNext(&tag, &ok, never);
        // It waited with nothing queued until just now.
        if (backlog != nullptr) backlog->MarkEmpty();
      }
      if (next == grpc::CompletionQueue::SHUTDOWN) return;
      proceed();
    }
  }
  PollGovernor governor(poll);
  while (true) {
    const absl::Time waiting = absl::Now();
    const absl::Time poll_until = waiting + governor.StartWait(waiting);
    grpc::CompletionQueue::NextStatus next;
    while ((next = next_queued()) == grpc::CompletionQueue::TIMEOUT) {
      if (absl::Now() >= poll_until) break;
      sched_yield();  // another runnable thread on this core goes first
    }
    if (next == grpc::CompletionQueue::TIMEOUT) {
      next = cq->AsyncNext(&tag, &ok, never);
      if (backlog != nullptr) backlog->MarkEmpty();
    }
    if (next == grpc::CompletionQueue::SHUTDOWN) return;
    governor.EndWait(absl::Now() - waiting);
    proceed();
  }
}

bool GrpcPollsOneEpollSet() {
#ifdef __linux__
  const char* strategy = std::getenv("GRPC_POLL_STRATEGY");
  if (strategy == nullptr) return true;
  // gRPC takes the first available strategy of the list; "all" and an
  // empty value mean its default order, epoll1 first.
  const std::vector<std::string> names = absl::StrSplit(strategy, ',');
  const std::string first(absl::StripAsciiWhitespace(names.front()));
  return first.empty() || first == "all" || first == "epoll1";
#else
  return false;
#endif
}

void AsyncCallCount::Created() {
  absl::MutexLock lock(&mu_);
  ++live_;
}

void AsyncCallCount::Destroyed() {
  absl::MutexLock lock(&mu_);
  --live_;
}

bool AsyncCallCount::AwaitNone(absl::Duration timeout, int* left) {
  absl::MutexLock lock(&mu_);
  auto none = [this]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return live_ == 0; };
  const bool idle = mu_.AwaitWithTimeout(absl::Condition(&none), timeout);
  if (left != nullptr) *left = live_;
  return idle;
}

}  // namespace tessera
