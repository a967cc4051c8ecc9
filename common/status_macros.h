#pragma once

// Propagation helpers for absl::Status / absl::StatusOr, in the style of
// Triton's RETURN_IF_ERROR.

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TESSERA_CONCAT_INNER_(a, b) a##b
#define TESSERA_CONCAT_(a, b) TESSERA_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)              \
  do {                                     \
    const absl::Status status_m_ = (expr); \
    if (!status_m_.ok()) return status_m_; \
  } while (false)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares x from an OK StatusOr or
// returns its status.
#define ASSIGN_OR_RETURN(lhs, expr)                         \
  auto TESSERA_CONCAT_(statusor_m_, __LINE__) = (expr);     \
  if (!TESSERA_CONCAT_(statusor_m_, __LINE__).ok())         \
    return TESSERA_CONCAT_(statusor_m_, __LINE__).status(); \
  lhs = std::move(TESSERA_CONCAT_(statusor_m_, __LINE__)).value()
