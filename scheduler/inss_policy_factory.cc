// Registers the "inss" and "inss-ni" scheduling policies: InssPolicy with
// its trained actor evaluated by MlpInssActor (no LibTorch).
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/inss_policy.h"
#include "scheduler/mlp_inss_actor.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

constexpr char kShippedRelative[] = "learner/checkpoints/inss_v100";

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
    const std::string& name, PolicyOptions options) {
  // Empty: the checkpoint shipped with the source tree, where the build
  // found it, else relative to the working directory (an installed tree
  // such as the docker image's /opt/tessera).
  std::string path = options.inss_checkpoint;
  if (path.empty()) {
    path = TESSERA_INSS_DEFAULT_CHECKPOINT;
    if (!std::filesystem::exists(path + ".pbtxt")) path = kShippedRelative;
  }
  ASSIGN_OR_RETURN(auto actor, MlpInssActor::Load(path));
  std::unique_ptr<SchedulingPolicy> fallback;
  if (!options.inss_fallback.empty()) {
    if (options.inss_fallback == "inss" || options.inss_fallback == "inss-ni") {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " cannot fall back to ", options.inss_fallback));
    }
    auto f = PolicyRegistry::Create(options.inss_fallback, options);
    if (!f.ok()) {
      return absl::Status(
          f.status().code(),
          absl::StrCat("inss fallback policy: ", f.status().message()));
    }
    fallback = std::move(*f);
  }
  // inss-ni: BDA without the interference term (the fallback keeps it).
  if (name == "inss-ni") options.interference = nullptr;
  return std::unique_ptr<SchedulingPolicy>(
      new InssPolicy(name, std::move(options), actor, std::move(fallback)));
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreateInss(
    const PolicyOptions& options) {
  return Create("inss", options);
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreateInssNi(
    const PolicyOptions& options) {
  return Create("inss-ni", options);
}

}  // namespace

REGISTER_SCHEDULING_POLICY("inss", CreateInss);
REGISTER_SCHEDULING_POLICY("inss-ni", CreateInssNi);

}  // namespace tessera
