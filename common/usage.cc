#include "common/usage.h"

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

namespace tessera {

void SetUsage(absl::string_view message) {
  absl::SetProgramUsageMessage(message);
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view path) {
    return absl::EndsWith(path, "_main.cc") ||
           absl::EndsWith(path, "_bench.cc");
  };
  absl::SetFlagsUsageConfig(config);
}

}  // namespace tessera
