#include "perfmodel/profile_dir.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/text_proto.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<ProfileDir>> ProfileDir::Load(
    const std::string& dir) {
  std::unique_ptr<ProfileDir> loaded(new ProfileDir());
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::filesystem::path& path = entry.path();
    if (path.extension() != ".pbtxt" || path.stem() == "interference") {
      continue;
    }
    ModelProfile profile;
    RETURN_IF_ERROR(ReadTextProto(path.string(), &profile));
    loaded->profiles_[profile.model()] = std::move(profile);
  }
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile dir ", dir, ": ", ec.message()));
  }
  if (loaded->profiles_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile dir ", dir, ": no <model>.pbtxt profiles"));
  }
  ASSIGN_OR_RETURN(loaded->models_, BuildLatencyModels(loaded->profiles_));
  const std::string pairs = dir + "/pairs.csv";
  if (std::filesystem::exists(pairs)) {
    RETURN_IF_ERROR(loaded->ReadPairs(pairs));
  }
  return loaded;
}

absl::Status ProfileDir::ReadPairs(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1 || line.empty()) continue;  // the header
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", number, ": ", why));
    };
    if (f.size() != 8) return bad("expected 8 fields");
    CoLocationSample sample;
    double other_latency_ms = 0;
    if (!absl::SimpleAtoi(f[1], &sample.self.batch) ||
        !absl::SimpleAtod(f[2], &sample.self.share_percent) ||
        !absl::SimpleAtoi(f[4], &sample.other.batch) ||
        !absl::SimpleAtod(f[5], &sample.other.share_percent) ||
        !absl::SimpleAtod(f[6], &sample.latency_ms) ||
        !absl::SimpleAtod(f[7], &other_latency_ms) || sample.latency_ms <= 0) {
      return bad("a number does not parse or a latency is not positive");
    }
    auto self = models_.find(f[0]);
    auto other = models_.find(f[3]);
    if (self == models_.end() || other == models_.end()) {
      return bad(absl::StrCat("no profile of ", f[0], " or ", f[3]));
    }
    sample.self.model = &self->second;
    sample.other.model = &other->second;
    pairs_.push_back(sample);
  }
  return absl::OkStatus();
}

}  // namespace tessera
