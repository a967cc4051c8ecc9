#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "model_config.pb.h"

namespace tessera {

// Bytes per element; 0 for TYPE_INVALID.
int64_t DataTypeSize(DataType type);

// KServe v2 wire name ("FP32", "INT64", ...).
std::string DataTypeWireName(DataType type);

// Inverse of DataTypeWireName; INVALID_ARGUMENT for an unknown name.
absl::StatusOr<DataType> DataTypeFromWireName(const std::string& name);

// Product of the dimensions; -1 if any dimension is negative.
int64_t ElementCount(absl::Span<const int64_t> shape);

// "[1, 3, 224, 224]".
std::string ShapeToString(absl::Span<const int64_t> shape);

}  // namespace tessera
