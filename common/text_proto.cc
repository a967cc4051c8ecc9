#include "common/text_proto.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace tessera {
namespace {

// Collects the parser's first error so it can be returned as a Status.
class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) {
      first_ = absl::StrCat("line ", line + 1, ", column ", column + 1, ": ",
                            message);
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

}  // namespace

absl::Status ReadFileToString(const std::string& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open file '", path, "'"));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *contents = buffer.str();
  return absl::OkStatus();
}

absl::Status ParseTextProto(const std::string& text,
                            google::protobuf::Message* message) {
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot parse ", message->GetTypeName(), ": ", errors.first()));
  }
  return absl::OkStatus();
}

absl::Status ReadTextProto(const std::string& path,
                           google::protobuf::Message* message) {
  std::string text;
  RETURN_IF_ERROR(ReadFileToString(path, &text));
  if (absl::Status status = ParseTextProto(text, message); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", status.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteTextProto(const std::string& path,
                            const google::protobuf::Message& message) {
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(message, &text)) {
    return absl::InternalError("cannot print text proto");
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write file '", tmp, "'"));
    }
    out << text;
    if (!out) return absl::DataLossError(absl::StrCat("short write: ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename to '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace tessera
