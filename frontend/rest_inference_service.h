#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/http_message.h"
#include "frontend/inference_service.h"

namespace tessera {

// KServe v2 over HTTP/REST, on the frontend's HTTP port: server and model
// metadata, model readiness, inference (JSON tensors and Triton's
// binary-data extension), and Triton's model config, statistics and
// repository routes. Every route runs through the gRPC service's handlers,
// so validation, admission, routing, metrics and errors are the same;
// errors are an HTTP status (MEASURES.md's table) with {"error": message}.
// Thread-safe; Handle blocks until the call has its answer.
class RestInferenceService {
 public:
  struct Options {
    // The longest Handle waits for an inference call's answer (the router
    // answers every call by its deadline; this bounds a lost answer).
    absl::Duration max_wait = absl::Seconds(60);
  };

  // `service` must outlive this.
  RestInferenceService(InferenceService* service, Options options)
      : service_(service), options_(options) {}

  HttpReply Handle(const HttpRequest& request);

  // The HTTP status of a canonical code, as MEASURES.md's table gives it.
  static int HttpStatusOf(absl::StatusCode code);
  // {"error": message} with the status's HTTP code.
  static HttpReply ErrorReply(const absl::Status& status);

 private:
  InferenceService* service_;
  const Options options_;

  // /v2/models/{name}[/versions/{version}][/{action}], split.
  struct ModelRoute {
    std::string name;
    std::string version;
    std::string action;  // "", "ready", "infer", "config", "stats"
  };
  HttpReply HandleModel(const HttpRequest& request, const ModelRoute& route);
  HttpReply Infer(const HttpRequest& request, const ModelRoute& route);
  HttpReply Repository(const HttpRequest& request,
                       const std::vector<std::string>& parts);
};

}  // namespace tessera
