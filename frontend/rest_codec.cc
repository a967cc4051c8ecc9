#include "frontend/rest_codec.h"

#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/data_type.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera {
namespace {

using Json = nlohmann::json;

// Deeper nesting than any tensor has is refused, not recursed into.
constexpr int kMaxNesting = 32;

template <class T>
void AppendBytes(T value, std::string* out) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out->append(bytes, sizeof(T));
}

template <class T>
T ReadBytes(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// Appends one JSON element as `type`'s bytes; false if it is not a value
// of that type (wrong kind or out of range).
bool AppendElement(const Json& v, DataType type, std::string* out) {
  auto signed_in = [&](int64_t lo, int64_t hi, int64_t* x) {
    if (!v.is_number_integer()) return false;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(hi)) return false;
      *x = static_cast<int64_t>(u);
      return true;
    }
    *x = v.get<int64_t>();
    return *x >= lo && *x <= hi;
  };
  auto unsigned_in = [&](uint64_t hi, uint64_t* x) {
    if (!v.is_number_integer()) return false;
    if (!v.is_number_unsigned() && v.get<int64_t>() < 0) return false;
    *x = v.get<uint64_t>();
    return *x <= hi;
  };
  int64_t i = 0;
  uint64_t u = 0;
  switch (type) {
    case TYPE_BOOL:
      if (!v.is_boolean()) return false;
      AppendBytes<uint8_t>(v.get<bool>() ? 1 : 0, out);
      return true;
    case TYPE_INT8:
      if (!signed_in(INT8_MIN, INT8_MAX, &i)) return false;
      AppendBytes<int8_t>(static_cast<int8_t>(i), out);
      return true;
    case TYPE_INT16:
      if (!signed_in(INT16_MIN, INT16_MAX, &i)) return false;
      AppendBytes<int16_t>(static_cast<int16_t>(i), out);
      return true;
    case TYPE_INT32:
      if (!signed_in(INT32_MIN, INT32_MAX, &i)) return false;
      AppendBytes<int32_t>(static_cast<int32_t>(i), out);
      return true;
    case TYPE_INT64:
      if (!signed_in(INT64_MIN, INT64_MAX, &i)) return false;
      AppendBytes<int64_t>(i, out);
      return true;
    case TYPE_UINT8:
      if (!unsigned_in(UINT8_MAX, &u)) return false;
      AppendBytes<uint8_t>(static_cast<uint8_t>(u), out);
      return true;
    case TYPE_FP32:
      if (!v.is_number()) return false;
      AppendBytes<float>(static_cast<float>(v.get<double>()), out);
      return true;
    case TYPE_FP64:
      if (!v.is_number()) return false;
      AppendBytes<double>(v.get<double>(), out);
      return true;
    default:
      return false;
  }
}

// Appends the elements of `data` (a value or arrays of arrays of values,
// row-major) as `type`'s bytes.
absl::Status AppendData(const Json& data, DataType type, int depth,
                        const std::string& where, std::string* out) {
  if (!data.is_array()) {
    if (AppendElement(data, type, out)) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", data.dump(), " is not a ",
                     DataTypeWireName(type), " value"));
  }
  if (depth >= kMaxNesting) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": data nested deeper than ", kMaxNesting));
  }
  for (const Json& element : data) {
    if (absl::Status s = AppendData(element, type, depth + 1, where, out);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// Whether `type`'s elements have a JSON form; FP16 travels as binary data
// only.
bool HasJsonForm(DataType type) {
  return type != TYPE_FP16 && DataTypeSize(type) > 0;
}

// Appends `raw` (elements of `type`) to `data` as JSON values.
absl::Status RawToJson(absl::string_view raw, DataType type, Json* data) {
  const int64_t size = DataTypeSize(type);
  if (size <= 0 || raw.size() % size != 0) {
    return absl::InternalError("output bytes do not fit its datatype");
  }
  *data = Json::array();
  for (size_t at = 0; at < raw.size(); at += size) {
    const char* p = raw.data() + at;
    switch (type) {
      case TYPE_BOOL:
        data->push_back(ReadBytes<uint8_t>(p) != 0);
        break;
      case TYPE_INT8:
        data->push_back(ReadBytes<int8_t>(p));
        break;
      case TYPE_INT16:
        data->push_back(ReadBytes<int16_t>(p));
        break;
      case TYPE_INT32:
        data->push_back(ReadBytes<int32_t>(p));
        break;
      case TYPE_INT64:
        data->push_back(ReadBytes<int64_t>(p));
        break;
      case TYPE_UINT8:
        data->push_back(ReadBytes<uint8_t>(p));
        break;
      case TYPE_FP32:
        data->push_back(ReadBytes<float>(p));
        break;
      case TYPE_FP64:
        data->push_back(ReadBytes<double>(p));
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat(DataTypeWireName(type),
                         " outputs go back as binary data only: ask for "
                         "them with \"binary_data\": true"));
    }
  }
  return absl::OkStatus();
}

// An optional boolean parameter of a "parameters" object.
absl::StatusOr<bool> BoolParameter(const Json& object, const char* name,
                                   const std::string& where) {
  auto params = object.find("parameters");
  if (params == object.end()) return false;
  if (!params->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": \"parameters\" must be an object"));
  }
  auto it = params->find(name);
  if (it == params->end()) return false;
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": parameter \"", name, "\" must be a boolean"));
  }
  return it->get<bool>();
}

// An input's "parameters": its "binary_data_size" (-1 when absent); shared
// memory is refused.
absl::StatusOr<int64_t> BinaryDataSize(const Json& in,
                                       const std::string& where) {
  int64_t binary_size = -1;
  if (auto params = in.find("parameters"); params != in.end()) {
    if (!params->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": \"parameters\" must be an object"));
    }
    for (const auto& [key, value] : params->items()) {
      if (key.rfind("shared_memory_", 0) == 0) {
        return absl::UnimplementedError(absl::StrCat(
            where, ": parameter \"", key,
            "\": shared-memory tensors are not supported; send the data "
            "in the body"));
      }
    }
    if (auto size = params->find("binary_data_size"); size != params->end()) {
      if (!size->is_number_integer() || size->get<int64_t>() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(where,
                         ": \"binary_data_size\" must be a "
                         "non-negative integer"));
      }
      binary_size = size->get<int64_t>();
    }
  }
  return binary_size;
}

// One input of the JSON header into `tensor` and its bytes into `raw`,
// taking binary data from `binary` (advanced past what it uses).
absl::Status DecodeInput(const Json& in, int index,
                         inference::ModelInferRequest::InferInputTensor* tensor,
                         std::string* raw, absl::string_view* binary) {
  std::string where = absl::StrCat("inputs[", index, "]");
  if (!in.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " must be an object"));
  }
  auto name = in.find("name");
  if (name == in.end() || !name->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " needs a string \"name\""));
  }
  tensor->set_name(name->get<std::string>());
  where = absl::StrCat("input '", tensor->name(), "'");
  auto datatype = in.find("datatype");
  if (datatype == in.end() || !datatype->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " needs a string \"datatype\""));
  }
  tensor->set_datatype(datatype->get<std::string>());
  auto shape = in.find("shape");
  if (shape == in.end() || !shape->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " needs a \"shape\" array"));
  }
  for (const Json& d : *shape) {
    if (!d.is_number_integer()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": shape ", shape->dump(), " must hold integers"));
    }
    tensor->add_shape(d.get<int64_t>());
  }
  ASSIGN_OR_RETURN(const int64_t binary_size, BinaryDataSize(in, where));
  auto data = in.find("data");
  if (binary_size >= 0) {
    if (data != in.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": both \"data\" and \"binary_data_size\" given"));
    }
    if (static_cast<uint64_t>(binary_size) > binary->size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": binary_data_size ", binary_size, " but only ",
          binary->size(), " bytes of binary data are left in the body"));
    }
    raw->assign(binary->data(), binary_size);
    binary->remove_prefix(binary_size);
    return absl::OkStatus();
  }
  if (data == in.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " has neither \"data\" nor a \"binary_data_size\" parameter"));
  }
  auto type = DataTypeFromWireName(tensor->datatype());
  if (!type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", type.status().message()));
  }
  if (!HasJsonForm(*type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": ", tensor->datatype(), " data must be sent as binary data"));
  }
  return AppendData(*data, *type, 0, where, raw);
}

// The requested outputs and how each goes back.
absl::Status DecodeOutputs(const Json& header, RestCodec::InferRequest* out) {
  auto outputs = header.find("outputs");
  if (outputs == header.end()) return absl::OkStatus();
  if (!outputs->is_array()) {
    return absl::InvalidArgumentError("\"outputs\" must be an array");
  }
  int index = 0;
  for (const Json& o : *outputs) {
    const std::string where = absl::StrCat("outputs[", index++, "]");
    if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " needs a string \"name\""));
    }
    const std::string name = o["name"].get<std::string>();
    out->request.add_outputs()->set_name(name);
    auto params = o.find("parameters");
    if (params != o.end() && params->is_object() &&
        params->contains("binary_data")) {
      ASSIGN_OR_RETURN(auto binary, BoolParameter(o, "binary_data", where));
      (binary ? out->binary_outputs : out->json_outputs).insert(name);
    } else if (params != o.end() && !params->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": \"parameters\" must be an object"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RestCodec::InferRequest> RestCodec::DecodeInferRequest(
    absl::string_view body, int64_t json_bytes, const std::string& model,
    const std::string& version) {
  if (json_bytes < 0) json_bytes = static_cast<int64_t>(body.size());
  if (static_cast<uint64_t>(json_bytes) > body.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Inference-Header-Content-Length is ", json_bytes,
                     " but the body has ", body.size(), " bytes"));
  }
  const Json header = Json::parse(body.substr(0, json_bytes), nullptr,
                                  /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return absl::InvalidArgumentError(
        "the request body is not a JSON object (KServe v2 inference "
        "request)");
  }
  InferRequest out;
  out.request.set_model_name(model);
  out.request.set_model_version(version);
  if (auto id = header.find("id"); id != header.end()) {
    if (!id->is_string()) {
      return absl::InvalidArgumentError("\"id\" must be a string");
    }
    out.request.set_id(id->get<std::string>());
  }
  ASSIGN_OR_RETURN(auto binary_default,
                   BoolParameter(header, "binary_data_output", "request"));
  out.binary_by_default = binary_default;
  auto inputs = header.find("inputs");
  if (inputs == header.end() || !inputs->is_array()) {
    return absl::InvalidArgumentError("the request needs an \"inputs\" array");
  }
  absl::string_view binary = body.substr(json_bytes);
  int index = 0;
  for (const Json& in : *inputs) {
    if (absl::Status s =
            DecodeInput(in, index++, out.request.add_inputs(),
                        out.request.add_raw_input_contents(), &binary);
        !s.ok()) {
      return s;
    }
  }
  if (!binary.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(binary.size(),
                     " bytes of binary data follow the JSON header that no "
                     "input's binary_data_size claims"));
  }
  if (absl::Status s = DecodeOutputs(header, &out); !s.ok()) return s;
  return out;
}

absl::StatusOr<RestCodec::Body> RestCodec::EncodeInferResponse(
    const inference::ModelInferResponse& response, const InferRequest& how) {
  nlohmann::ordered_json header;
  header["model_name"] = response.model_name();
  header["model_version"] = response.model_version();
  if (!response.id().empty()) header["id"] = response.id();
  header["outputs"] = nlohmann::ordered_json::array();
  std::string binary;
  for (int i = 0; i < response.outputs_size(); ++i) {
    const auto& o = response.outputs(i);
    const std::string& raw = i < response.raw_output_contents_size()
                                 ? response.raw_output_contents(i)
                                 : std::string();
    nlohmann::ordered_json out;
    out["name"] = o.name();
    out["datatype"] = o.datatype();
    out["shape"] = std::vector<int64_t>(o.shape().begin(), o.shape().end());
    const bool as_binary =
        how.binary_outputs.count(o.name()) > 0 ||
        (how.binary_by_default && how.json_outputs.count(o.name()) == 0);
    if (as_binary) {
      out["parameters"]["binary_data_size"] = raw.size();
      binary.append(raw);
    } else {
      auto type = DataTypeFromWireName(o.datatype());
      if (!type.ok()) return absl::InternalError(type.status().message());
      Json data;
      if (absl::Status s = RawToJson(raw, *type, &data); !s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("output '", o.name(), "': ", s.message()));
      }
      out["data"] = std::move(data);
    }
    header["outputs"].push_back(std::move(out));
  }
  Body body;
  body.bytes = header.dump();
  if (!binary.empty() || how.binary_by_default || !how.binary_outputs.empty()) {
    body.json_bytes = static_cast<int64_t>(body.bytes.size());
    body.bytes.append(binary);
  }
  return body;
}

}  // namespace tessera
