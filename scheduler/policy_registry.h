#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

using PolicyFactory =
    std::function<absl::StatusOr<std::unique_ptr<SchedulingPolicy>>(
        const PolicyOptions&)>;

// Process-wide table of scheduling policies by name. Policies register
// themselves from their own .cc with REGISTER_SCHEDULING_POLICY; binaries
// link the policy library whole (see scheduler/CMakeLists.txt) so every
// registration runs. Thread-safe.
class PolicyRegistry {
 public:
  // Returns false if `name` is taken.
  static bool Register(const std::string& name, PolicyFactory factory);
  // NOT_FOUND listing the registered names when `name` is unknown.
  static absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
      const std::string& name, const PolicyOptions& options);
  // Sorted.
  static std::vector<std::string> Names();
};

#define TESSERA_REGISTER_POLICY_CONCAT_(a, b) a##b
#define TESSERA_REGISTER_POLICY_NAME_(line) \
  TESSERA_REGISTER_POLICY_CONCAT_(tessera_policy_registered_, line)
// Registers `factory` under `name` at static-initialisation time.
#define REGISTER_SCHEDULING_POLICY(name, factory)             \
  static const bool TESSERA_REGISTER_POLICY_NAME_(__LINE__) = \
      ::tessera::PolicyRegistry::Register(name, factory)

}  // namespace tessera
