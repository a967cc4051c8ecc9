#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tessera {

// What a client is told when a model throws: the exception's last line
// (TorchScript puts the error itself there, after a traceback that names
// the server's files), cut to 200 bytes, without the traceback.
std::string ShortModelError(absl::string_view what);

}  // namespace tessera
