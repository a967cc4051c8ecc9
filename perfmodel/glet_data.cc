#include "perfmodel/glet_data.h"

#include <fstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tessera {

absl::StatusOr<LinearInterference> LoadGletInterferenceConstants(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::string header, line;
  std::getline(in, header);
  if (!std::getline(in, line)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no coefficient line"));
  }
  std::vector<double> c;
  for (absl::string_view field : absl::StrSplit(
           absl::StripAsciiWhitespace(line), ',', absl::SkipEmpty())) {
    double v;
    if (!absl::SimpleAtod(field, &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": '", field, "' is not a number"));
    }
    c.push_back(v);
  }
  if (c.size() != 5) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected 5 coefficients (L2 self, L2 other, DRAM self, ",
        "DRAM other, constant), found ", c.size()));
  }
  return LinearInterference(c);
}

}  // namespace tessera
