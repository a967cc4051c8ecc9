#include "common/http_endpoint.h"

#include <httplib.h>

#include "absl/strings/ascii.h"
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
  if (handlers.api) {
    s.set_payload_max_length(handlers.max_body_bytes);
    auto call = [api = handlers.api](const httplib::Request& req,
                                     std::string body, httplib::Response& res) {
      HttpRequest request;
      request.method = req.method;
      request.path = req.path;
      for (const auto& [name, value] : req.headers) {
        request.headers[absl::AsciiStrToLower(name)] = value;
      }
      request.body = std::move(body);
      request.peer =
          absl::StrCat("ipv4:", req.remote_addr, ":", req.remote_port);
      HttpReply reply = api(request);
      res.status = reply.status;
      for (const auto& [name, value] : reply.headers) {
        res.set_header(name, value);
      }
      res.set_content(reply.body, reply.content_type);
    };
    s.Get(R"(/v2(/.*)?)",
          [call](const httplib::Request& req, httplib::Response& res) {
            call(req, "", res);
          });
    // Bodies are read here whatever their Content-Type: httplib's own
    // reading would refuse a form-encoded body over 8 KiB (what curl -d
    // sends) and parse it as a query.
    // Bodies over max_body_bytes: httplib reads and drops them (so that a
    // client still sending gets the answer) and `read` returns false.
    s.Post(R"(/v2(/.*)?)", [call, max = handlers.max_body_bytes](
                               const httplib::Request& req,
                               httplib::Response& res,
                               const httplib::ContentReader& read) {
      if (req.is_multipart_form_data()) {
        res.status = 415;
        res.set_content(R"({"error":"multipart bodies are not supported"})",
                        "application/json");
        return;
      }
      std::string body;
      const bool whole = read([&body](const char* data, size_t length) {
        body.append(data, length);
        return true;
      });
      if (!whole) {
        const bool too_large =
            req.get_header_value<uint64_t>("Content-Length") > max;
        res.status = too_large ? 413 : 400;
        res.set_content(too_large
                            ? absl::StrCat("{\"error\":\"request body over ",
                                           max, " bytes (--max_message_mb)\"}")
                            : R"({"error":"incomplete request body"})",
                        "application/json");
        return;
      }
      call(req, std::move(body), res);
    });
  }
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
