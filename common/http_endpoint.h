#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/http_message.h"

namespace httplib {
class Server;
}

namespace tessera {

// The HTTP side of a process (cpp-httplib; this is the only source that
// includes it): Prometheus metrics at /metrics and Triton-style health at
// /v2/health/live (200 while the process serves) and /v2/health/ready (200
// when `ready` says so, else 503); every other GET or POST under /v2 goes to
// `api` when given (404 otherwise).
class HttpEndpoint {
 public:
  struct Handlers {
    std::function<std::string()> metrics;
    std::function<bool()> ready;
    // Runs on one of the endpoint's threads and may block until it has
    // its answer.
    std::function<HttpReply(const HttpRequest&)> api;
    // Bodies larger than this are refused with 413 before `api` runs.
    size_t max_body_bytes = 64 << 20;
  };

  // Listens on host:port (port 0: any free port) in a thread of its own;
  // HTTPS when `tls_cert_file` and `tls_key_file` (PEM) are given.
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(
      const std::string& host, int port, Handlers handlers,
      const std::string& tls_cert_file = "",
      const std::string& tls_key_file = "");
  ~HttpEndpoint();

  int port() const { return port_; }

 private:
  HttpEndpoint() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace tessera
