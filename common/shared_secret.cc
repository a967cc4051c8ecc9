#include "common/shared_secret.h"

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

namespace tessera {
namespace {

constexpr char kMetadataKey[] = "authorization";
constexpr char kScheme[] = "Bearer ";
constexpr size_t kMinTokenChars = 16;

// No early exit on the first differing byte.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const std::string& longer = a.size() >= b.size() ? a : b;
  for (size_t i = 0; i < longer.size(); ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<SharedSecret> SharedSecret::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string line;
  std::getline(in, line);
  std::string token(absl::StripAsciiWhitespace(line));
  if (token.size() < kMinTokenChars) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the token on its first line has ", token.size(),
                     " characters; at least ", kMinTokenChars,
                     " are needed (e.g. openssl rand -hex 32)"));
  }
  return SharedSecret(std::move(token));
}

absl::Status SharedSecret::Check(const std::string* metadata_value) const {
  if (metadata_value == nullptr) {
    return absl::UnauthenticatedError(
        "this call needs the metadata 'authorization: Bearer <token>'");
  }
  if (token_.empty() ||
      !ConstantTimeEquals(*metadata_value, absl::StrCat(kScheme, token_))) {
    return absl::PermissionDeniedError("wrong token");
  }
  return absl::OkStatus();
}

absl::Status SharedSecret::Check(const grpc::ServerContext& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kMetadataKey);
  if (it == metadata.end()) return Check(nullptr);
  const std::string value(it->second.data(), it->second.size());
  return Check(&value);
}

void SharedSecret::Attach(grpc::ClientContext* context) const {
  if (token_.empty()) return;
  context->AddMetadata(kMetadataKey, absl::StrCat(kScheme, token_));
}

}  // namespace tessera
