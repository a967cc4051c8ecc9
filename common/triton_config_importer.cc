#include "common/triton_config_importer.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "triton_model_config.pb.h"

namespace tessera {
namespace {

// Collects the lenient parse's errors and its unknown-field warnings.
class Collector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (error.empty()) {
      error = absl::StrCat("line ", line + 1, ", column ", column + 1, ": ",
                           message);
    }
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string& message) override {
    warnings.push_back({line + 1, message});
  }
  struct Warning {
    int line;
    std::string message;
  };
  std::string error;
  std::vector<Warning> warnings;
};

// Parses `text` as Triton's ModelConfig, skipping fields the message lacks
// and reporting them as warnings.
bool ParseLeniently(const std::string& text, inference::ModelConfig* config,
                    Collector* collector) {
  google::protobuf::TextFormat::Parser parser;
  parser.AllowUnknownField(true);
  parser.RecordErrorsTo(collector);
  return parser.ParseFromString(text, config);
}

absl::StatusOr<DataType> FromTritonType(inference::DataType type,
                                        const std::string& tensor) {
  switch (type) {
    case inference::TYPE_BOOL:
      return TYPE_BOOL;
    case inference::TYPE_UINT8:
      return TYPE_UINT8;
    case inference::TYPE_INT8:
      return TYPE_INT8;
    case inference::TYPE_INT16:
      return TYPE_INT16;
    case inference::TYPE_INT32:
      return TYPE_INT32;
    case inference::TYPE_INT64:
      return TYPE_INT64;
    case inference::TYPE_FP16:
      return TYPE_FP16;
    case inference::TYPE_FP32:
      return TYPE_FP32;
    case inference::TYPE_FP64:
      return TYPE_FP64;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(tensor, ": data_type ", inference::DataType_Name(type),
                       " is not served (TYPE_BOOL, TYPE_UINT8, TYPE_INT8/16/"
                       "32/64 and TYPE_FP16/32/64 are)"));
  }
}

template <class TritonTensor>
absl::Status AddTensor(const TritonTensor& in, const char* kind,
                       TensorConfig* out) {
  const std::string where = absl::StrCat(kind, " '", in.name(), "'");
  out->set_name(in.name());
  ASSIGN_OR_RETURN(auto type, FromTritonType(in.data_type(), where));
  out->set_data_type(type);
  out->add_dims(-1);  // the batch dimension Triton's dims leave out
  for (int64_t d : in.dims()) out->add_dims(d);
  return absl::OkStatus();
}

// Tessera's fields from the config's parameters.
absl::Status ReadParameters(const inference::ModelConfig& in,
                            ModelConfig* out) {
  for (const auto& [key, value] : in.parameters()) {
    const std::string& text = value.string_value();
    if (key == "slo_ms") {
      double slo_ms = 0;
      if (!absl::SimpleAtod(text, &slo_ms) || slo_ms <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parameters \"slo_ms\": '", text, "' is not a positive number"));
      }
      out->set_slo_ms(slo_ms);
    } else if (key == "default_version") {
      out->set_default_version(text);
    } else if (key == "segment_count") {
      int32_t segments = 0;
      if (!absl::SimpleAtoi(text, &segments) || segments < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parameters \"segment_count\": '", text, "' is not a count"));
      }
      out->set_segment_count(segments);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameters \"", key,
          "\" is unknown (Tessera reads slo_ms, default_version and "
          "segment_count)"));
    }
  }
  if (out->slo_ms() <= 0) {
    return absl::InvalidArgumentError(
        "a Triton config needs the model's latency SLO: parameters { key: "
        "\"slo_ms\" value { string_value: \"<milliseconds>\" } }");
  }
  return absl::OkStatus();
}

// The field a lenient-parse warning names, if it is an unknown field of
// Triton's top-level ModelConfig; "" for one nested deeper.
std::string UnknownTopLevelField(const std::string& warning,
                                 std::string* nested_in) {
  // protobuf: Message type "inference.ModelConfig" has no field named "x".
  const std::string type_mark = "Message type \"";
  const std::string field_mark = "has no field named \"";
  const size_t t = warning.find(type_mark);
  const size_t f = warning.find(field_mark);
  if (t == std::string::npos || f == std::string::npos) return "";
  const size_t type_start = t + type_mark.size();
  const std::string type =
      warning.substr(type_start, warning.find('"', type_start) - type_start);
  const size_t name_start = f + field_mark.size();
  const std::string name =
      warning.substr(name_start, warning.find('"', name_start) - name_start);
  if (type == "inference.ModelConfig") return name;
  *nested_in = type;
  return name;
}

}  // namespace

const std::vector<std::string>& TritonConfigImporter::IgnoredFields() {
  static const auto* fields = new std::vector<std::string>{
      "version_policy",           "optimization",   "model_warmup",
      "model_transaction_policy", "response_cache", "default_model_filename",
      "cc_model_filenames",       "metric_tags",    "model_repository_agents",
      "model_operations",         "runtime"};
  return *fields;
}

bool TritonConfigImporter::IsTritonConfig(const std::string& text) {
  inference::ModelConfig config;
  Collector collector;
  if (!ParseLeniently(text, &config, &collector)) return false;
  return config.platform() == "pytorch_libtorch" ||
         config.backend() == "pytorch";
}

absl::StatusOr<ModelConfig> TritonConfigImporter::Import(
    const std::string& text, std::vector<std::string>* notes) {
  inference::ModelConfig in;
  Collector collector;
  if (!ParseLeniently(text, &in, &collector)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot parse Triton's ModelConfig: ", collector.error,
        " (inside a field Tessera ignores, write a list of messages as "
        "repeated entries: protobuf's parser cannot skip \"[ { ... } ]\")"));
  }
  auto note = [notes](std::string line) {
    if (notes != nullptr) notes->push_back(std::move(line));
  };
  for (const Collector::Warning& w : collector.warnings) {
    std::string nested_in;
    const std::string field = UnknownTopLevelField(w.message, &nested_in);
    if (field.empty()) continue;
    const std::string where =
        absl::StrCat("line ", w.line, ": field \"", field, "\"");
    if (!nested_in.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " of ", nested_in, " is not supported"));
    }
    const auto& ignored = IgnoredFields();
    if (std::find(ignored.begin(), ignored.end(), field) == ignored.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where,
          " is neither supported nor on the list of fields accepted "
          "and ignored (",
          absl::StrJoin(ignored, ", "), ")"));
    }
    note(absl::StrCat(field, " ignored"));
  }
  if (in.platform() != "pytorch_libtorch" && in.backend() != "pytorch") {
    return absl::InvalidArgumentError(
        absl::StrCat("platform '", in.platform(), "' / backend '", in.backend(),
                     "' is not served: Tessera runs TorchScript (platform "
                     "\"pytorch_libtorch\")"));
  }
  if (in.max_batch_size() <= 0) {
    return absl::InvalidArgumentError(
        "max_batch_size must be > 0: Tessera batches every model (dims "
        "then leave the batch dimension out)");
  }
  ModelConfig out;
  out.set_name(in.name());
  out.set_platform("torchscript");
  out.set_max_batch_size(in.max_batch_size());
  for (const auto& t : in.input()) {
    RETURN_IF_ERROR(AddTensor(t, "input", out.add_input()));
  }
  for (const auto& t : in.output()) {
    RETURN_IF_ERROR(AddTensor(t, "output", out.add_output()));
  }
  if (in.instance_group_size() > 0) {
    note("instance_group ignored: placement is the scheduling policy's");
  }
  if (in.has_dynamic_batching()) {
    // 0 is Triton's default (`dynamic_batching { }`): no bound, so the
    // deadline rule alone decides when a batch leaves. A batch sent as soon
    // as the gpulet can take it would serve smaller batches than planned
    // (docs/triton.md has the measured effect of a bound).
    const auto& batching = in.dynamic_batching();
    const uint64_t delay_us = batching.max_queue_delay_microseconds();
    if (delay_us > 0) {
      out.set_max_queue_delay_ms(static_cast<double>(delay_us) / 1000);
    }
    note(absl::StrCat(
        "dynamic_batching: ",
        delay_us > 0
            ? absl::StrCat("a batch leaves once its oldest request has "
                           "waited ",
                           out.max_queue_delay_ms(),
                           " ms (max_queue_delay_microseconds)")
            : "no queue delay bound (max_queue_delay_microseconds 0): "
              "batches leave by the SLO-aware deadline rule",
        "; batch sizes come from the policy",
        batching.preferred_batch_size_size() > 0
            ? " (preferred_batch_size ignored)"
            : ""));
  }
  RETURN_IF_ERROR(ReadParameters(in, &out));
  return out;
}

}  // namespace tessera
