#include "common/http_endpoint.h"

#include <httplib.h>

#include "absl/strings/str_cat.h"

namespace tessera {

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(
    const std::string& host, int port, Handlers handlers,
    const std::string& tls_cert_file, const std::string& tls_key_file) {
  auto endpoint = std::unique_ptr<HttpEndpoint>(new HttpEndpoint());
  if (tls_cert_file.empty()) {
    endpoint->server_ = std::make_unique<httplib::Server>();
  } else {
    auto tls = std::make_unique<httplib::SSLServer>(tls_cert_file.c_str(),
                                                    tls_key_file.c_str());
    if (!tls->is_valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("HTTPS: cannot use the certificate ", tls_cert_file,
                       " with the key ", tls_key_file));
    }
    endpoint->server_ = std::move(tls);
  }
  httplib::Server& s = *endpoint->server_;
  s.Get("/metrics", [metrics = handlers.metrics](const httplib::Request&,
                                                 httplib::Response& res) {
    res.set_content(metrics ? metrics() : "",
                    "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
  });
  s.Get("/v2/health/ready", [ready = handlers.ready](const httplib::Request&,
                                                     httplib::Response& res) {
    res.status = (!ready || ready()) ? 200 : 503;
  });
  endpoint->port_ = port == 0 ? s.bind_to_any_port(host)
                              : (s.bind_to_port(host, port) ? port : -1);
  if (endpoint->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen for HTTP on ", host, ":", port));
  }
  endpoint->thread_ = std::thread([&s] { s.listen_after_bind(); });
  return endpoint;
}

HttpEndpoint::~HttpEndpoint() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tessera
