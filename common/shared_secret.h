#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace grpc {
class ClientContext;
class ServerContext;
}  // namespace grpc

namespace tessera {

// A token shared by the components of one cluster (frontend and backends,
// or an operator and the frontend's admin calls), carried as the gRPC
// metadata "authorization: Bearer <token>". Empty: no token configured.
class SharedSecret {
 public:
  SharedSecret() = default;
  explicit SharedSecret(std::string token) : token_(std::move(token)) {}

  // The first line of `path`, trimmed. Refuses a missing or unreadable
  // file, an empty token and one shorter than 16 characters (guessable).
  static absl::StatusOr<SharedSecret> FromFile(const std::string& path);

  bool empty() const { return token_.empty(); }

  // OK when `metadata_value` (the caller's "authorization" value, null if
  // it sent none) carries this token. UNAUTHENTICATED without credentials,
  // PERMISSION_DENIED with the wrong ones. Compares in constant time.
  absl::Status Check(const std::string* metadata_value) const;
  absl::Status Check(const grpc::ServerContext& context) const;

  // Adds this token to a call (nothing when empty).
  void Attach(grpc::ClientContext* context) const;

 private:
  std::string token_;
};

}  // namespace tessera
