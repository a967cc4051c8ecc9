#include "common/client_text.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace tessera {

std::string ClientText(absl::string_view s) {
  if (s.size() <= kMaxClientTextBytes) return absl::CHexEscape(s);
  return absl::StrCat(absl::CHexEscape(s.substr(0, kMaxClientTextBytes)),
                      "...(", s.size(), " bytes)");
}

}  // namespace tessera
