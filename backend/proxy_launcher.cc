#include "backend/proxy_launcher.h"

#include "common/status_macros.h"

namespace tessera {

absl::StatusOr<std::shared_ptr<Proxy>> ProcessProxyLauncher::Launch(
    const ProxyHandle::Options& options) {
  ASSIGN_OR_RETURN(auto proxy, ProxyHandle::Start(options));
  return std::shared_ptr<Proxy>(std::move(proxy));
}

}  // namespace tessera
