#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backend/backend_service.h"

namespace tessera {
namespace testing {

// A backend service with one cpu device and no gpulets, over an empty
// model repository at `repo_dir` (created by the caller): it answers a
// batch for any gpulet NOT_FOUND itself, so streams can be exercised
// without proxy processes.
inline absl::StatusOr<std::unique_ptr<BackendServiceImpl>> MakeEmptyBackend(
    const std::string& id, const std::string& repo_dir) {
  BackendServiceImpl::Options options;
  options.config.set_id(id);
  DeviceConfig* cpu = options.config.add_devices();
  cpu->set_id("cpu0");
  cpu->set_kind(DEVICE_KIND_CPU);
  options.model_repository = repo_dir;
  return BackendServiceImpl::Create(options);
}

}  // namespace testing
}  // namespace tessera
