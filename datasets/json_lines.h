#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tessera {

// The JSON objects of a JSON-lines file (one object per line; empty lines
// skipped), as the public iGniter data stores them. NOT_FOUND for a file
// that cannot be opened; INVALID_ARGUMENT naming the line that is not a
// JSON object.
absl::StatusOr<std::vector<nlohmann::json>> ReadJsonLines(
    const std::string& path);

}  // namespace tessera
