#include "datasets/json_lines.h"

#include <fstream>

#include "absl/strings/str_cat.h"

namespace tessera {

absl::StatusOr<std::vector<nlohmann::json>> ReadJsonLines(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::vector<nlohmann::json> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    nlohmann::json j =
        nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": not a JSON object"));
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace tessera
