#include "datasets/glet_data.h"

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

absl::StatusOr<std::map<std::string, std::map<int, GletUtil>>> LoadGletUtil(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::map<std::string, std::map<int, GletUtil>> out;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 || absl::StripAsciiWhitespace(line).empty()) continue;
    std::vector<std::string> f =
        absl::StrSplit(absl::StripAsciiWhitespace(line), ',');
    double v[6];
    int batch = 0;
    bool ok = f.size() >= 8 && !f[0].empty() && absl::SimpleAtoi(f[1], &batch);
    for (int k = 0; ok && k < 6; ++k) ok = absl::SimpleAtod(f[2 + k], &v[k]);
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": not 'model,batch,6 numbers'"));
    }
    out[f[0]][batch] = GletUtil{v[0], v[1], v[2], v[3], v[4], v[5]};
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no rows"));
  }
  return out;
}

}  // namespace tessera
