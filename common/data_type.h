#pragma once

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "model_config.pb.h"

namespace tessera {

// Bytes per element; 0 for TYPE_INVALID.
int64_t DataTypeSize(DataType type);

// UINT8, INT8, INT16, INT32 or INT64.
bool IsIntegerType(DataType type);

// The index of the first element of `bytes` (elements of integer `type`,
// native byte order, any alignment) outside [min, max], and its value; -1
// if every element is inside.
struct OutOfRange {
  int64_t index = -1;
  int64_t value = 0;
};
OutOfRange FindOutOfRange(absl::string_view bytes, DataType type, int64_t min,
                          int64_t max);

// KServe v2 wire name ("FP32", "INT64", ...).
std::string DataTypeWireName(DataType type);

// Inverse of DataTypeWireName; INVALID_ARGUMENT for an unknown name.
absl::StatusOr<DataType> DataTypeFromWireName(const std::string& name);

// Product of the dimensions; -1 if any dimension is negative or the
// product overflows int64.
int64_t ElementCount(absl::Span<const int64_t> shape);

// Bytes a dense tensor of `shape` and `type` holds; INVALID_ARGUMENT for a
// negative dimension, an invalid type or a size that overflows int64.
absl::StatusOr<int64_t> TensorBytes(absl::Span<const int64_t> shape,
                                    DataType type);

// "[1, 3, 224, 224]".
std::string ShapeToString(absl::Span<const int64_t> shape);

}  // namespace tessera
