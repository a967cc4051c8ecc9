#include "common/async_call.h"

#include <sched.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tessera {

void RunCompletionQueue(grpc::CompletionQueue* cq, const PollOptions& poll,
                        BacklogBound* backlog) {
  void* tag = nullptr;
  bool ok = false;
  const gpr_timespec past = gpr_time_0(GPR_CLOCK_MONOTONIC);  // don't block
  const gpr_timespec never = gpr_inf_future(GPR_CLOCK_MONOTONIC);
  auto mark_empty = [backlog] {
    if (backlog != nullptr) backlog->MarkEmpty();
  };
  if (poll.window <= absl::ZeroDuration()) {
    if (backlog == nullptr) {
      while (cq->Next(&tag, &ok)) static_cast<AsyncTag*>(tag)->Proceed(ok);
      return;
    }
    while (true) {
      grpc::CompletionQueue::NextStatus next = cq->AsyncNext(&tag, &ok, past);
      if (next == grpc::CompletionQueue::TIMEOUT) {
        mark_empty();
        next = cq->AsyncNext(&tag, &ok, never);
        mark_empty();  // it waited with nothing queued until just now
      }
      if (next == grpc::CompletionQueue::SHUTDOWN) return;
      static_cast<AsyncTag*>(tag)->Proceed(ok);
    }
  }
  PollGovernor governor(poll);
  while (true) {
    const absl::Time waiting = absl::Now();
    const absl::Time poll_until = waiting + governor.StartWait(waiting);
    grpc::CompletionQueue::NextStatus next;
    while ((next = cq->AsyncNext(&tag, &ok, past)) ==
           grpc::CompletionQueue::TIMEOUT) {
      mark_empty();
      if (absl::Now() >= poll_until) break;
      sched_yield();  // another runnable thread on this core goes first
    }
    if (next == grpc::CompletionQueue::TIMEOUT) {
      next = cq->AsyncNext(&tag, &ok, never);
      mark_empty();
    }
    if (next == grpc::CompletionQueue::SHUTDOWN) return;
    governor.EndWait(absl::Now() - waiting);
    static_cast<AsyncTag*>(tag)->Proceed(ok);
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
