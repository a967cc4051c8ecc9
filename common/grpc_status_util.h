#pragma once

#include "absl/status/status.h"
#include "backend.pb.h"
#include "grpcpp/support/status.h"

namespace tessera {

// The single place where absl::Status and gRPC status meet. Both use the
// canonical code numbers, so codes map one to one.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// Status carried inside stream messages (see backend.proto StatusProto).
void ToStatusProto(const absl::Status& status, StatusProto* proto);
absl::Status FromStatusProto(const StatusProto& proto);

}  // namespace tessera
