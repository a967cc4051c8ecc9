#pragma once

#include "absl/status/status.h"
#include "backend.pb.h"

namespace tessera {

// Status carried inside stream and proxy messages (backend.proto
// StatusProto), with the canonical code numbers. No gRPC: the proxy uses it.
void ToStatusProto(const absl::Status& status, StatusProto* proto);
absl::Status FromStatusProto(const StatusProto& proto);

}  // namespace tessera
