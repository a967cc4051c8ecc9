#pragma once

#include "absl/status/status.h"
#include "common/status_proto.h"
#include "grpcpp/support/status.h"

namespace tessera {

// The single place where absl::Status and gRPC status meet. Both use the
// canonical code numbers, so codes map one to one.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace tessera
