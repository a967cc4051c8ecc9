#pragma once

#include "grpcpp/server_builder.h"
#include "grpcpp/support/channel_arguments.h"

namespace tessera {

// HTTP/2 receive window every Tessera endpoint advertises per stream: a
// whole image-size batch fits in it, so a large message is not held back
// waiting for window updates. Measured together with the allocator tuning
// (common/allocator_tuning.h): resnet18's serving overhead fell 25 %
// (docs/benchmarks.md). Flow control still bounds what one stream may
// buffer in the receiver.
constexpr int kStreamLookaheadBytes = 16 << 20;

// Applies the Tessera transport settings to a server / a client channel.
void ApplyTransportTuning(grpc::ServerBuilder* builder);
void ApplyTransportTuning(grpc::ChannelArguments* args);

}  // namespace tessera
