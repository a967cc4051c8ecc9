#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tessera {

// The most bytes of one client-supplied string an error message quotes.
inline constexpr size_t kMaxClientTextBytes = 64;

// A string the client sent (a model name, a version, an input's name) as
// an error message may quote it: control and non-ASCII bytes escaped, and
// cut to kMaxClientTextBytes with its full length noted, so that a client
// cannot push a status past gRPC's 8 KB limit or into a log as raw bytes.
std::string ClientText(absl::string_view s);

}  // namespace tessera
