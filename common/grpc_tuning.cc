#include "common/grpc_tuning.h"

namespace tessera {

void ApplyTransportTuning(grpc::ServerBuilder* builder) {
  builder->AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
                              kStreamLookaheadBytes);
}

void ApplyTransportTuning(grpc::ChannelArguments* args) {
  args->SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kStreamLookaheadBytes);
}

}  // namespace tessera
