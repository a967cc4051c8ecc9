#include "common/data_type.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {

int64_t DataTypeSize(DataType type) {
  switch (type) {
    case TYPE_BOOL:
    case TYPE_UINT8:
    case TYPE_INT8:
      return 1;
    case TYPE_INT16:
    case TYPE_FP16:
      return 2;
    case TYPE_INT32:
    case TYPE_FP32:
      return 4;
    case TYPE_INT64:
    case TYPE_FP64:
      return 8;
    default:
      return 0;
  }
}

bool IsIntegerType(DataType type) {
  switch (type) {
    case TYPE_UINT8:
    case TYPE_INT8:
    case TYPE_INT16:
    case TYPE_INT32:
    case TYPE_INT64:
      return true;
    default:
      return false;
  }
}

namespace {

template <typename T>
OutOfRange FindOutOfRangeAs(absl::string_view bytes, int64_t min, int64_t max) {
  const size_t n = bytes.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
    const int64_t value = static_cast<int64_t>(v);
    if (value < min || value > max) {
      return {static_cast<int64_t>(i), value};
    }
  }
  return {};
}

}  // namespace

OutOfRange FindOutOfRange(absl::string_view bytes, DataType type, int64_t min,
                          int64_t max) {
  switch (type) {
    case TYPE_UINT8:
      return FindOutOfRangeAs<uint8_t>(bytes, min, max);
    case TYPE_INT8:
      return FindOutOfRangeAs<int8_t>(bytes, min, max);
    case TYPE_INT16:
      return FindOutOfRangeAs<int16_t>(bytes, min, max);
    case TYPE_INT32:
      return FindOutOfRangeAs<int32_t>(bytes, min, max);
    case TYPE_INT64:
      return FindOutOfRangeAs<int64_t>(bytes, min, max);
    default:
      return {};
  }
}

std::string DataTypeWireName(DataType type) {
  const std::string& name = DataType_Name(type);
  // Enum names are TYPE_<WIRE>.
  return name.size() > 5 ? name.substr(5) : name;
}

absl::StatusOr<DataType> DataTypeFromWireName(const std::string& name) {
  DataType type;
  if (name.empty() || !DataType_Parse("TYPE_" + name, &type) ||
      type == TYPE_INVALID) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown datatype '", name, "'"));
  }
  return type;
}

int64_t ElementCount(absl::Span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(count, d, &count)) return -1;
  }
  return count;
}

absl::StatusOr<int64_t> TensorBytes(absl::Span<const int64_t> shape,
                                    DataType type) {
  const int64_t count = ElementCount(shape);
  const int64_t size = DataTypeSize(type);
  int64_t bytes = 0;
  if (count < 0 || size == 0 || __builtin_mul_overflow(count, size, &bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", ShapeToString(shape), " of ",
                     DataTypeWireName(type), " is not a valid tensor size"));
  }
  return bytes;
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace tessera
