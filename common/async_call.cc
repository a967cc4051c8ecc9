#include "common/async_call.h"

namespace tessera {

void RunCompletionQueue(grpc::CompletionQueue* cq) {
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<AsyncTag*>(tag)->Proceed(ok);
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
