#include "common/status_proto.h"

#include <string>

namespace tessera {

void ToStatusProto(const absl::Status& status, StatusProto* proto) {
  proto->set_code(static_cast<int>(status.code()));
  proto->set_message(std::string(status.message()));
}

absl::Status FromStatusProto(const StatusProto& proto) {
  if (proto.code() == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(proto.code()),
                      proto.message());
}

}  // namespace tessera
