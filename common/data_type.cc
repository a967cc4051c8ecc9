#include "common/data_type.h"

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
    if (d < 0) return -1;
    count *= d;
  }
  return count;
}

std::string ShapeToString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace tessera
