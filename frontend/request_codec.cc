#include "frontend/request_codec.h"

#include <cstring>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/client_text.h"
#include "common/data_type.h"
#include "common/status_macros.h"

namespace tessera {
namespace {

// Number of typed elements given for `type` in `contents`, and a converter
// that appends them as raw little-endian bytes.
absl::StatusOr<int64_t> TypedCount(DataType type,
                                   const inference::InferTensorContents& c) {
  switch (type) {
    case TYPE_BOOL:
      return c.bool_contents_size();
    case TYPE_INT8:
    case TYPE_INT16:
    case TYPE_INT32:
      return c.int_contents_size();
    case TYPE_INT64:
      return c.int64_contents_size();
    case TYPE_UINT8:
      return c.uint_contents_size();
    case TYPE_FP32:
      return c.fp32_contents_size();
    case TYPE_FP64:
      return c.fp64_contents_size();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("datatype ", DataTypeWireName(type),
                       " must be sent in raw_input_contents"));
  }
}

template <typename To, typename From>
void AppendAs(const From& values, std::string* out) {
  const size_t old = out->size();
  out->resize(old + values.size() * sizeof(To));
  To* dst = reinterpret_cast<To*>(out->data() + old);
  for (const auto& v : values) *dst++ = static_cast<To>(v);
}

void TypedToRaw(DataType type, const inference::InferTensorContents& c,
                std::string* out) {
  switch (type) {
    case TYPE_BOOL:
      AppendAs<uint8_t>(c.bool_contents(), out);
      break;
    case TYPE_INT8:
      AppendAs<int8_t>(c.int_contents(), out);
      break;
    case TYPE_INT16:
      AppendAs<int16_t>(c.int_contents(), out);
      break;
    case TYPE_INT32:
      AppendAs<int32_t>(c.int_contents(), out);
      break;
    case TYPE_INT64:
      AppendAs<int64_t>(c.int64_contents(), out);
      break;
    case TYPE_UINT8:
      AppendAs<uint8_t>(c.uint_contents(), out);
      break;
    case TYPE_FP32:
      AppendAs<float>(c.fp32_contents(), out);
      break;
    case TYPE_FP64:
      AppendAs<double>(c.fp64_contents(), out);
      break;
    default:
      break;
  }
}

bool HasTypedContents(const inference::InferTensorContents& c) {
  return c.bool_contents_size() || c.int_contents_size() ||
         c.int64_contents_size() || c.uint_contents_size() ||
         c.uint64_contents_size() || c.fp32_contents_size() ||
         c.fp64_contents_size() || c.bytes_contents_size();
}

// The request's "timeout" parameter: Triton's per-request timeout, an
// int64 of microseconds (0 or absent: none).
absl::StatusOr<absl::Duration> Timeout(
    const inference::ModelInferRequest& request) {
  auto param = request.parameters().find("timeout");
  if (param == request.parameters().end()) return absl::InfiniteDuration();
  if (param->second.parameter_choice_case() !=
          inference::InferParameter::kInt64Param ||
      param->second.int64_param() < 0) {
    return absl::InvalidArgumentError(
        "parameter 'timeout' must be an int64 of microseconds >= 0 (0: none)");
  }
  if (param->second.int64_param() == 0) return absl::InfiniteDuration();
  return absl::Microseconds(param->second.int64_param());
}

// The request's tessera.shape_only parameter (false when absent).
absl::StatusOr<bool> ShapeOnly(const inference::ModelInferRequest& request,
                               const std::string& model, bool raw) {
  auto param = request.parameters().find("tessera.shape_only");
  if (param == request.parameters().end()) return false;
  if (param->second.parameter_choice_case() !=
      inference::InferParameter::kBoolParam) {
    return absl::InvalidArgumentError(
        "parameter 'tessera.shape_only' must be a bool");
  }
  if (param->second.bool_param() && raw) {
    return absl::InvalidArgumentError(
        absl::StrCat(model,
                     ": a shape-only request (tessera.shape_only) carries no "
                     "raw_input_contents"));
  }
  return param->second.bool_param();
}

absl::StatusOr<int> FindInput(const ModelConfig& config,
                              const std::string& name,
                              const std::string& model) {
  for (int i = 0; i < config.input_size(); ++i) {
    if (config.input(i).name() == name) return i;
  }
  std::string names;
  for (const auto& t : config.input()) {
    absl::StrAppend(&names, names.empty() ? "" : ", ", "'", t.name(), "'");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      model, " has no input '", ClientText(name), "'; its inputs are ", names));
}

// The input's datatype and shape against its config; its batch dimension
// must agree with the other inputs' (`items`, 0 before the first).
absl::Status CheckInput(
    const inference::ModelInferRequest::InferInputTensor& in,
    const TensorConfig& tc, int max_batch_size, const std::string& where,
    int* items) {
  if (in.datatype() != DataTypeWireName(tc.data_type())) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has datatype '", in.datatype(), "'; expected ",
                     DataTypeWireName(tc.data_type())));
  }
  std::vector<int64_t> expected(tc.dims().begin(), tc.dims().end());
  std::vector<int64_t> shape(in.shape().begin(), in.shape().end());
  bool shape_ok = shape.size() == expected.size() && !shape.empty();
  for (size_t d = 1; shape_ok && d < shape.size(); ++d) {
    shape_ok = shape[d] == expected[d];
  }
  if (!shape_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has shape ", ShapeToString(shape), "; expected ",
                     ShapeToString(expected), " (-1: batch dimension)"));
  }
  if (shape[0] < 1 || shape[0] > max_batch_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " has batch dimension ", shape[0], "; must be in [1, ",
        max_batch_size, "] (max_batch_size)"));
  }
  if (*items == 0) {
    *items = static_cast<int>(shape[0]);
  } else if (*items != shape[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has batch dimension ", shape[0],
                     " but another input has ", *items));
  }
  return absl::OkStatus();
}

// The input's data: none (shape-only), its raw_input_contents entry, or
// its typed contents converted to raw bytes in `owned`.
absl::Status DecodeContents(const inference::ModelInferRequest& request, int r,
                            const TensorConfig& tc, bool shape_only, bool raw,
                            const std::string& where, absl::string_view* data,
                            std::string* owned) {
  const auto& in = request.inputs(r);
  const std::vector<int64_t> shape(in.shape().begin(), in.shape().end());
  const int64_t elements = ElementCount(shape);
  const int64_t bytes = elements * DataTypeSize(tc.data_type());
  if (shape_only) {
    if (HasTypedContents(in.contents())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where,
                       ": a shape-only request (tessera.shape_only) carries no "
                       "contents"));
    }
    return absl::OkStatus();
  }
  if (raw) {
    if (HasTypedContents(in.contents())) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": typed contents and raw_input_contents are exclusive"));
    }
    const std::string& raw_data = request.raw_input_contents(r);
    if (static_cast<int64_t>(raw_data.size()) != bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has ", raw_data.size(), " bytes of raw data; ", "shape ",
          ShapeToString(shape), " of ", in.datatype(), " needs ", bytes));
    }
    *data = raw_data;
    return absl::OkStatus();
  }
  auto count = TypedCount(tc.data_type(), in.contents());
  if (!count.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", count.status().message()));
  }
  if (*count != elements) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has ", *count, " elements; shape ",
                     ShapeToString(shape), " needs ", elements));
  }
  owned->reserve(bytes);
  TypedToRaw(tc.data_type(), in.contents(), owned);
  *data = *owned;
  return absl::OkStatus();
}

// The outputs the request asks for (all when it names none), in config
// order.
absl::StatusOr<std::vector<int>> SelectOutputs(
    const inference::ModelInferRequest& request, const ModelConfig& config,
    const std::string& model) {
  std::vector<int> outputs;
  if (request.outputs_size() == 0) {
    for (int o = 0; o < config.output_size(); ++o) outputs.push_back(o);
    return outputs;
  }
  std::set<int> chosen;
  for (const auto& want : request.outputs()) {
    int idx = -1;
    for (int o = 0; o < config.output_size(); ++o) {
      if (config.output(o).name() == want.name()) idx = o;
    }
    if (idx < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          model, " has no output '", ClientText(want.name()), "'"));
    }
    chosen.insert(idx);
  }
  return std::vector<int>(chosen.begin(), chosen.end());
}

}  // namespace

namespace {

// Triton's shared-memory extension names a region instead of sending the
// data (tensor parameters shared_memory_region, _byte_size, _offset).
// Tessera does not register regions: such a tensor is refused by name,
// not decoded as an empty one.
absl::Status RefuseSharedMemory(const inference::ModelInferRequest& request,
                                const std::string& model) {
  auto refuse = [&](absl::string_view kind, const std::string& name,
                    const auto& parameters) -> absl::Status {
    for (const auto& [key, value] : parameters) {
      if (absl::StartsWith(key, "shared_memory_")) {
        return absl::UnimplementedError(absl::StrCat(
            model, " ", kind, " '", ClientText(name), "': shared-memory ",
            "tensors (parameter ", ClientText(key),
            ") are not supported; send the data in raw_input_contents or "
            "contents, and read outputs from the response"));
      }
    }
    return absl::OkStatus();
  };
  for (const auto& in : request.inputs()) {
    RETURN_IF_ERROR(refuse("input", in.name(), in.parameters()));
  }
  for (const auto& out : request.outputs()) {
    RETURN_IF_ERROR(refuse("output", out.name(), out.parameters()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DecodedRequest> RequestCodec::Decode(
    const inference::ModelInferRequest& request, const ModelConfig& config) {
  const std::string model = absl::StrCat("model '", config.name(), "'");
  RETURN_IF_ERROR(RefuseSharedMemory(request, model));
  const int num_inputs = config.input_size();
  const bool raw = request.raw_input_contents_size() > 0;
  if (raw && request.raw_input_contents_size() != request.inputs_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        model, ": ", request.inputs_size(), " inputs but ",
        request.raw_input_contents_size(), " raw_input_contents entries"));
  }
  DecodedRequest decoded;
  // Shape-only mode (load generation at scale): inputs carry shapes, no
  // data; the backend fabricates it.
  ASSIGN_OR_RETURN(decoded.shape_only, ShapeOnly(request, model, raw));
  ASSIGN_OR_RETURN(decoded.timeout, Timeout(request));
  decoded.inputs.resize(num_inputs);
  decoded.owned.resize(num_inputs);
  std::vector<bool> seen(num_inputs, false);
  for (int r = 0; r < request.inputs_size(); ++r) {
    const auto& in = request.inputs(r);
    ASSIGN_OR_RETURN(const int idx, FindInput(config, in.name(), model));
    if (seen[idx]) {
      return absl::InvalidArgumentError(absl::StrCat(
          model, ": input '", ClientText(in.name()), "' given twice"));
    }
    seen[idx] = true;
    const TensorConfig& tc = config.input(idx);
    const std::string where = absl::StrCat(model, " input '", in.name(), "'");
    RETURN_IF_ERROR(
        CheckInput(in, tc, config.max_batch_size(), where, &decoded.items));
    RETURN_IF_ERROR(DecodeContents(request, r, tc, decoded.shape_only, raw,
                                   where, &decoded.inputs[idx],
                                   &decoded.owned[idx]));
    if (tc.has_value_range() && !decoded.shape_only) {
      const OutOfRange bad =
          FindOutOfRange(decoded.inputs[idx], tc.data_type(),
                         tc.value_range().min(), tc.value_range().max());
      if (bad.index >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": element ", bad.index, " is ", bad.value,
            ", outside the model's value_range [", tc.value_range().min(), ", ",
            tc.value_range().max(), "]"));
      }
    }
  }
  for (int i = 0; i < num_inputs; ++i) {
    if (!seen[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          model, ": missing input '", config.input(i).name(), "' (",
          DataTypeWireName(config.input(i).data_type()), " ",
          ShapeToString(std::vector<int64_t>(config.input(i).dims().begin(),
                                             config.input(i).dims().end())),
          ")"));
    }
  }
  ASSIGN_OR_RETURN(decoded.outputs, SelectOutputs(request, config, model));
  return decoded;
}

absl::Status RequestCodec::EncodeOutputs(
    const BatchResponse& batch, int row_offset, int items,
    const DecodedRequest& decoded, const ModelConfig& config,
    inference::ModelInferResponse* response) {
  for (int o : decoded.outputs) {
    const std::string& name = config.output(o).name();
    const Tensor* tensor = nullptr;
    for (const Tensor& t : batch.outputs()) {
      if (t.name() == name) tensor = &t;
    }
    if (tensor == nullptr || tensor->shape_size() == 0) {
      return absl::InternalError(
          absl::StrCat("backend returned no output '", name, "'"));
    }
    const int64_t rows = tensor->shape(0);
    if (rows <= 0 || row_offset + items > rows ||
        tensor->data().size() % rows != 0) {
      return absl::InternalError(absl::StrCat("output '", name, "' has ", rows,
                                              " rows; need rows [", row_offset,
                                              ", ", row_offset + items, ")"));
    }
    const size_t row_bytes = tensor->data().size() / rows;
    auto* out = response->add_outputs();
    out->set_name(name);
    out->set_datatype(DataTypeWireName(tensor->data_type()));
    out->add_shape(items);
    for (int d = 1; d < tensor->shape_size(); ++d) {
      out->add_shape(tensor->shape(d));
    }
    response->add_raw_output_contents()->assign(
        tensor->data().data() + row_offset * row_bytes, items * row_bytes);
  }
  return absl::OkStatus();
}

}  // namespace tessera
