#include "proxy/error_text.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tessera {

std::string ShortModelError(absl::string_view what) {
  constexpr size_t kMaxBytes = 200;
  absl::string_view last;
  for (absl::string_view line : absl::StrSplit(what, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) last = line;
  }
  if (last.size() <= kMaxBytes) return std::string(last);
  return absl::StrCat(last.substr(0, kMaxBytes), "...");
}

}  // namespace tessera
