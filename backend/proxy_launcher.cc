#include "backend/proxy_launcher.h"

namespace tessera {

absl::StatusOr<std::shared_ptr<Proxy>> ProcessProxyLauncher::Launch(
    const ProxyHandle::Options& options) {
  auto proxy = ProxyHandle::Start(options);
  if (!proxy.ok()) return proxy.status();
  return std::shared_ptr<Proxy>(std::move(*proxy));
}

}  // namespace tessera
