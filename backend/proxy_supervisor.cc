#include "backend/proxy_supervisor.h"

#include "common/thread_name.h"

namespace tessera {

ProxySupervisor::ProxySupervisor(absl::Duration period,
                                 std::function<void()> check)
    : period_(period), check_(std::move(check)) {
  thread_ = std::thread([this] { Loop(); });
}

void ProxySupervisor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void ProxySupervisor::Loop() {
  NameThisThread("supervisor");
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), period_);
      if (stopping_) return;
    }
    check_();
  }
}

}  // namespace tessera
