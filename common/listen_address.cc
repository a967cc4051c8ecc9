#include "common/listen_address.h"

#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace tessera {

bool IsLoopbackListenAddress(absl::string_view host_port) {
  const size_t colon = host_port.rfind(':');
  absl::string_view host =
      colon == absl::string_view::npos ? host_port : host_port.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[")) absl::ConsumeSuffix(&host, "]");
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

}  // namespace tessera
