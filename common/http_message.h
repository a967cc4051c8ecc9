#pragma once

#include <map>
#include <string>

namespace tessera {

// One HTTP request as the HTTP endpoint hands it to an API handler, with
// no HTTP library in sight.
struct HttpRequest {
  std::string method;  // "GET", "POST"
  std::string path;    // without the query string
  // Header names in lower case.
  std::map<std::string, std::string> headers;
  std::string body;
  std::string peer;  // "ipv4:127.0.0.1:5555"
};

// An API handler's answer.
struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::map<std::string, std::string> headers;
};

}  // namespace tessera
