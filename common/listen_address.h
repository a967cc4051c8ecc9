#pragma once

#include "absl/strings/string_view.h"

namespace tessera {

// Whether a host:port (or [v6]:port) to listen on is reachable only from
// this host: 127.0.0.0/8, ::1 or localhost.
bool IsLoopbackListenAddress(absl::string_view host_port);

}  // namespace tessera
