// Registers the "inss" and "inss-ni" scheduling policies: InssPolicy with
// the trained actor PolicyOptions carries (loaded by the caller, no I/O
// here).
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/inss_policy.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> Create(
    const std::string& name, PolicyOptions options) {
  if (options.inss_actor == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        name,
        " needs its trained actor (PolicyOptions::inss_actor, e.g. "
        "MlpInssActor::LoadOrShipped), and none was loaded"));
  }
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
  std::shared_ptr<const InssActor> actor = options.inss_actor;
  return std::unique_ptr<SchedulingPolicy>(new InssPolicy(
      name, std::move(options), std::move(actor), std::move(fallback)));
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
