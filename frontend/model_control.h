#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tessera {

// Loading and unloading models of the repository at run time (the KServe
// v2 repository RPCs). An unloaded model leaves the scheduling snapshot, so
// the next plan frees its gpulets; loading it back puts it in again.
// Implemented by the FrontendServer. Thread-safe.
class ModelControl {
 public:
  virtual ~ModelControl() = default;
  // Block until a plan without (with) the model is in force, or `deadline`.
  // NOT_FOUND for a model the repository does not hold; DEADLINE_EXCEEDED
  // when no such plan came in time (the request stands: a later plan
  // honours it).
  virtual absl::Status UnloadModel(const std::string& name,
                                   absl::Time deadline) = 0;
  virtual absl::Status LoadModel(const std::string& name,
                                 absl::Time deadline) = 0;
  virtual bool IsUnloaded(const std::string& name) const = 0;
};

}  // namespace tessera
