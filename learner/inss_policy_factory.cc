// Registers the "inss" scheduling policy: InssPolicy (scheduler/, torch-free)
// with its actor loaded by LibTorch. Binaries that offer "inss" link
// tessera_learner_all.
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "learner/torch_inss_actor.h"
#include "scheduler/inss_policy.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

constexpr char kShippedRelative[] = "learner/checkpoints/inss_v100x4";

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreateInss(
    const PolicyOptions& options) {
  // Empty: the checkpoint shipped with the source tree, where the build
  // found it, else relative to the working directory (an installed tree
  // such as the docker image's /opt/tessera).
  std::string path = options.inss_checkpoint;
  if (path.empty()) {
    path = TESSERA_INSS_DEFAULT_CHECKPOINT;
    if (!std::filesystem::exists(path + ".pbtxt")) path = kShippedRelative;
  }
  auto actor = TorchInssActor::Load(path);
  if (!actor.ok()) return actor.status();
  std::unique_ptr<SchedulingPolicy> fallback;
  if (!options.inss_fallback.empty()) {
    if (options.inss_fallback == "inss") {
      return absl::InvalidArgumentError("inss cannot fall back to itself");
    }
    auto f = PolicyRegistry::Create(options.inss_fallback, options);
    if (!f.ok()) {
      return absl::Status(
          f.status().code(),
          absl::StrCat("inss fallback policy: ", f.status().message()));
    }
    fallback = std::move(*f);
  }
  return std::unique_ptr<SchedulingPolicy>(
      new InssPolicy(options, *actor, std::move(fallback)));
}

}  // namespace

REGISTER_SCHEDULING_POLICY("inss", CreateInss);

}  // namespace tessera
