#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tessera {

// The model behind an instance name: "alexnet" for "alexnet/2" (a replica
// a workload serves under its own name), the name itself otherwise.
inline std::string BaseModelName(absl::string_view instance) {
  return std::string(instance.substr(0, instance.find('/')));
}

}  // namespace tessera
