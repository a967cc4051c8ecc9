#pragma once

#include <string>

#include "common/poll_governor.h"

namespace tessera {

// The serving-overhead benchmark's one-hop floor: a KServe ModelInfer
// service that echoes the first raw input back as the first raw output.
struct EchoServerOptions {
  // Callback API, the call finished from another thread (as the frontend
  // finishes calls from its backend-stream reader thread): what that
  // hand-off alone costs.
  bool handoff = false;
  // gRPC's synchronous API instead.
  bool sync = false;
  // gRPC's asynchronous API, one thread polling one completion queue and
  // answering inline (`poll` says how it polls).
  bool async = false;
  PollOptions poll;
};

// Serves the echo on a free loopback port, writes the port to `port_file`
// (replaced atomically) and returns at SIGTERM or SIGINT; the process's
// exit code.
int ServeEcho(const std::string& port_file, const EchoServerOptions& options);

}  // namespace tessera
