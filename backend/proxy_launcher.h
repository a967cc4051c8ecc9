#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "backend/proxy.h"
#include "backend/proxy_handle.h"

namespace tessera {

// Starts the proxy of one gpulet: loaded, warmed up and ready for batches,
// or an error. The backend starts every proxy through this seam, so its
// plan logic is tested with in-memory proxies. Thread-safe.
class ProxyLauncher {
 public:
  virtual ~ProxyLauncher() = default;
  virtual absl::StatusOr<std::shared_ptr<Proxy>> Launch(
      const ProxyHandle::Options& options) = 0;
};

// Spawns a proxy process (ProxyHandle::Start).
class ProcessProxyLauncher final : public ProxyLauncher {
 public:
  absl::StatusOr<std::shared_ptr<Proxy>> Launch(
      const ProxyHandle::Options& options) override;
};

}  // namespace tessera
