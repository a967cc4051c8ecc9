#pragma once

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace tessera {

// Parses the protobuf text-format file at `path` into `message`. Errors name
// the file and the line that failed to parse.
absl::Status ReadTextProto(const std::string& path,
                           google::protobuf::Message* message);

// Parses text-format `text` (e.g. a flag value or a test fixture).
absl::Status ParseTextProto(const std::string& text,
                            google::protobuf::Message* message);

// Writes `message` in text format to `path`, atomically (temp file + rename).
absl::Status WriteTextProto(const std::string& path,
                            const google::protobuf::Message& message);

// Reads a whole file.
absl::Status ReadFileToString(const std::string& path, std::string* contents);

}  // namespace tessera
