#include "common/async_call.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tessera {

void RunCompletionQueue(grpc::CompletionQueue* cq) {
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<AsyncTag*>(tag)->Proceed(ok);
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
