#include "frontend/rest_inference_service.h"

#include <memory>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "common/grpc_status_util.h"
#include "frontend/rest_codec.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"

namespace tessera {
namespace {

using Json = nlohmann::json;

constexpr char kHeaderLength[] = "inference-header-content-length";

HttpReply JsonReply(const Json& json, int status = 200) {
  HttpReply reply;
  reply.status = status;
  reply.body = json.dump();
  return reply;
}

// Fields proto3's JSON mapping writes as strings (64-bit integers) that
// KServe's and Triton's REST bodies carry as numbers.
const std::set<std::string>& IntegerFields() {
  static const auto* fields =
      new std::set<std::string>{"shape",
                                "dims",
                                "max_queue_delay_microseconds",
                                "count",
                                "ns",
                                "batch_size",
                                "last_inference",
                                "inference_count",
                                "execution_count"};
  return *fields;
}

void NumbersForIntegerFields(Json* json, bool integer_field) {
  if (json->is_string() && integer_field) {
    int64_t value = 0;
    uint64_t unsigned_value = 0;
    if (absl::SimpleAtoi(json->get<std::string>(), &value)) {
      *json = value;
    } else if (absl::SimpleAtoi(json->get<std::string>(), &unsigned_value)) {
      *json = unsigned_value;
    }
  } else if (json->is_array()) {
    for (Json& element : *json)
      NumbersForIntegerFields(&element, integer_field);
  } else if (json->is_object()) {
    for (auto& [key, value] : json->items()) {
      NumbersForIntegerFields(&value, IntegerFields().count(key) > 0);
    }
  }
}

// `message` as the JSON of KServe's and Triton's REST bodies.
absl::StatusOr<Json> ToJson(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  if (!google::protobuf::util::MessageToJsonString(message, &text, options)
           .ok()) {
    return absl::InternalError("cannot write the answer as JSON");
  }
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InternalError("cannot write the answer as JSON");
  }
  NumbersForIntegerFields(&json, false);
  return json;
}

// `message` as a 200 JSON reply (500 if it cannot be written).
HttpReply MessageReply(const google::protobuf::Message& message) {
  auto json = ToJson(message);
  return json.ok() ? JsonReply(*json)
                   : RestInferenceService::ErrorReply(json.status());
}

// Runs a handler that answers inline (every one but inference and
// load/unload) and returns its status.
template <class Request, class Response>
absl::Status CallInline(
    InferenceService* service,
    void (InferenceService::*handler)(grpc::ServerContext*, const Request*,
                                      Response*, InferenceService::Finish),
    const Request& request, Response* response) {
  absl::Status status = absl::InternalError("the handler did not answer");
  (service->*handler)(
      nullptr, &request, response,
      [&status](const grpc::Status& s) { status = FromGrpcStatus(s); });
  return status;
}

template <class Request, class Response>
HttpReply InlineJson(
    InferenceService* service,
    void (InferenceService::*handler)(grpc::ServerContext*, const Request*,
                                      Response*, InferenceService::Finish),
    const Request& request) {
  Response response;
  absl::Status status = CallInline(service, handler, request, &response);
  if (!status.ok()) return RestInferenceService::ErrorReply(status);
  return MessageReply(response);
}

// A call handed to a handler that may answer on another thread: the
// handler's side holds it until it finishes, so the HTTP side may stop
// waiting first.
template <class Request, class Response>
struct PendingCall {
  Request request;
  Response response;
  absl::Status status;
  absl::Notification done;

  InferenceService::Finish Finisher(std::shared_ptr<PendingCall> self) {
    return [self](const grpc::Status& s) {
      self->status = FromGrpcStatus(s);
      self->done.Notify();
    };
  }
};

HttpReply MethodNotAllowed(const HttpRequest& request) {
  HttpReply reply = RestInferenceService::ErrorReply(absl::InvalidArgumentError(
      absl::StrCat(request.method, " is not allowed on ", request.path)));
  reply.status = 405;
  return reply;
}

HttpReply NoRoute(const HttpRequest& request) {
  return RestInferenceService::ErrorReply(absl::NotFoundError(
      absl::StrCat("no KServe v2 route ", request.method, " ", request.path)));
}

}  // namespace

int RestInferenceService::HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kCancelled:
      return 499;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

HttpReply RestInferenceService::ErrorReply(const absl::Status& status) {
  HttpReply reply = JsonReply(Json{{"error", std::string(status.message())}},
                              HttpStatusOf(status.code()));
  if (status.code() == absl::StatusCode::kUnavailable ||
      status.code() == absl::StatusCode::kResourceExhausted) {
    reply.headers["Retry-After"] = "1";
  }
  return reply;
}

HttpReply RestInferenceService::Handle(const HttpRequest& request) {
  std::vector<std::string> parts =
      absl::StrSplit(request.path, '/', absl::SkipEmpty());
  if (parts.empty() || parts[0] != "v2") return NoRoute(request);
  const bool get = request.method == "GET";
  if (parts.size() == 1) {
    if (!get) return MethodNotAllowed(request);
    return InlineJson(service_, &InferenceService::ServerMetadata,
                      inference::ServerMetadataRequest());
  }
  if (parts[1] == "repository") return Repository(request, parts);
  if (parts[1] != "models" || parts.size() < 3) return NoRoute(request);
  if (parts.size() == 3 && parts[2] == "stats") {
    if (!get) return MethodNotAllowed(request);
    auto report = service_->Statistics("", "");
    return report.ok() ? MessageReply(*report) : ErrorReply(report.status());
  }
  ModelRoute route;
  route.name = parts[2];
  size_t next = 3;
  if (parts.size() >= 5 && parts[3] == "versions") {
    route.version = parts[4];
    next = 5;
  }
  if (parts.size() > next + 1) return NoRoute(request);
  if (parts.size() == next + 1) route.action = parts[next];
  return HandleModel(request, route);
}

HttpReply RestInferenceService::HandleModel(const HttpRequest& request,
                                            const ModelRoute& route) {
  const bool get = request.method == "GET";
  if (route.action == "infer") {
    if (request.method != "POST") return MethodNotAllowed(request);
    return Infer(request, route);
  }
  if (!get) return MethodNotAllowed(request);
  if (route.action.empty()) {
    inference::ModelMetadataRequest metadata;
    metadata.set_name(route.name);
    metadata.set_version(route.version);
    return InlineJson(service_, &InferenceService::ModelMetadata, metadata);
  }
  if (route.action == "ready") {
    // KServe: 200 when ready, a 4xx when not (404 when it does not exist).
    auto version =
        service_->repository().ResolveVersion(route.name, route.version);
    if (!version.ok()) return ErrorReply(version.status());
    HttpReply reply;
    reply.status = service_->ModelIsReady(route.name) ? 200 : 400;
    return reply;
  }
  if (route.action == "config") {
    inference::ModelConfigRequest request_config;
    request_config.set_name(route.name);
    request_config.set_version(route.version);
    inference::ModelConfigResponse config;
    absl::Status status = CallInline(service_, &InferenceService::ModelConfig,
                                     request_config, &config);
    if (!status.ok()) return ErrorReply(status);
    // Triton's REST answer is the config itself.
    return MessageReply(config.config());
  }
  if (route.action == "stats") {
    auto report = service_->Statistics(route.name, route.version);
    return report.ok() ? MessageReply(*report) : ErrorReply(report.status());
  }
  return NoRoute(request);
}

HttpReply RestInferenceService::Infer(const HttpRequest& request,
                                      const ModelRoute& route) {
  int64_t json_bytes = -1;
  if (auto it = request.headers.find(kHeaderLength);
      it != request.headers.end()) {
    if (!absl::SimpleAtoi(it->second, &json_bytes) || json_bytes < 0) {
      return ErrorReply(absl::InvalidArgumentError(
          absl::StrCat("Inference-Header-Content-Length '", it->second,
                       "' is not a byte count")));
    }
  }
  auto decoded = RestCodec::DecodeInferRequest(request.body, json_bytes,
                                               route.name, route.version);
  if (!decoded.ok()) return ErrorReply(decoded.status());
  using Call =
      PendingCall<inference::ModelInferRequest, inference::ModelInferResponse>;
  auto call = std::make_shared<Call>();
  call->request = std::move(decoded->request);
  service_->Infer({request.peer, absl::InfiniteFuture()}, &call->request,
                  &call->response, call->Finisher(call));
  if (!call->done.WaitForNotificationWithTimeout(options_.max_wait)) {
    return ErrorReply(absl::DeadlineExceededError(absl::StrCat(
        "no answer within ", absl::FormatDuration(options_.max_wait))));
  }
  if (!call->status.ok()) return ErrorReply(call->status);
  auto body = RestCodec::EncodeInferResponse(call->response, *decoded);
  if (!body.ok()) return ErrorReply(body.status());
  HttpReply reply;
  reply.body = std::move(body->bytes);
  if (body->json_bytes >= 0) {
    reply.content_type = "application/octet-stream";
    reply.headers["Inference-Header-Content-Length"] =
        absl::StrCat(body->json_bytes);
  }
  return reply;
}

HttpReply RestInferenceService::Repository(
    const HttpRequest& request, const std::vector<std::string>& parts) {
  if (request.method != "POST") return MethodNotAllowed(request);
  if (parts.size() == 3 && parts[2] == "index") {
    inference::RepositoryIndexRequest index;
    if (!request.body.empty()) {
      const Json body = Json::parse(request.body, nullptr, false);
      if (body.is_discarded() || !body.is_object() ||
          (body.contains("ready") && !body["ready"].is_boolean())) {
        return ErrorReply(absl::InvalidArgumentError(
            "the index request body must be {\"ready\": true|false}"));
      }
      index.set_ready(body.value("ready", false));
    }
    inference::RepositoryIndexResponse response;
    absl::Status status = CallInline(
        service_, &InferenceService::RepositoryIndex, index, &response);
    if (!status.ok()) return ErrorReply(status);
    auto json = ToJson(response);
    if (!json.ok()) return ErrorReply(json.status());
    // Triton's REST index is the list itself.
    return JsonReply(json->value("models", Json::array()));
  }
  if (parts.size() != 5 || parts[2] != "models" ||
      (parts[4] != "load" && parts[4] != "unload")) {
    return NoRoute(request);
  }
  using Call = PendingCall<int, int>;
  auto call = std::make_shared<Call>();
  auto auth = request.headers.find("authorization");
  service_->LoadOrUnload(
      parts[4] == "load",
      auth == request.headers.end() ? nullptr : &auth->second, parts[3],
      absl::InfiniteFuture(), call->Finisher(call));
  // The service gives up waiting for a plan after two minutes.
  if (!call->done.WaitForNotificationWithTimeout(absl::Seconds(130))) {
    return ErrorReply(absl::DeadlineExceededError("no plan came in time"));
  }
  if (!call->status.ok()) return ErrorReply(call->status);
  return JsonReply(Json::object());
}

}  // namespace tessera
