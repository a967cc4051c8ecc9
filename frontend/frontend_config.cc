#include "frontend/frontend_config.h"

#include <memory>
#include <set>
#include <vector>
#include "absl/strings/match.h"
#include "scheduler/mlp_inss_actor.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "common/text_proto.h"
#include "perfmodel/interference_model.h"
#include "scheduler/static_policy.h"

namespace tessera {

absl::Status ValidateFrontendConfig(FrontendConfig* c) {
  if (c->backends_size() == 0) {
    return absl::InvalidArgumentError("frontend config lists no backends");
  }
  for (const BackendEndpoint& b : c->backends()) {
    if (b.id().empty() || b.address().empty()) {
      return absl::InvalidArgumentError(
          "every backend needs an id and an address");
    }
  }
  // Without a policy: the static plan when one is given or there are no
  // profiles to plan with, Tessera's own policy otherwise.
  if (c->policy().empty()) {
    c->set_policy(c->static_plan().devices_size() > 0 ||
                          c->profile_dir().empty()
                      ? "static"
                      : "tessera");
  }
  if (c->time_scale() == 0) c->set_time_scale(1);
  if (c->replan_period_s() == 0) c->set_replan_period_s(20);
  if (c->rate_window_s() == 0) c->set_rate_window_s(20);
  if (c->replan_threshold() == 0) c->set_replan_threshold(0.25);
  if (c->min_rate_rps() == 0) c->set_min_rate_rps(1);
  if (c->heartbeat_interval_s() == 0) c->set_heartbeat_interval_s(1);
  if (c->heartbeat_misses() == 0) c->set_heartbeat_misses(3);
  if (c->drain_timeout_s() == 0) c->set_drain_timeout_s(30);
  if (!(c->time_scale() > 0) || !(c->replan_period_s() > 0) ||
      !(c->rate_window_s() > 0) || !(c->replan_threshold() > 0) ||
      c->min_rate_rps() < 0 || !(c->heartbeat_interval_s() > 0) ||
      c->heartbeat_misses() < 1 || !(c->drain_timeout_s() > 0)) {
    return absl::InvalidArgumentError(
        "frontend config: time_scale, replan_period_s, rate_window_s, "
        "replan_threshold, heartbeat_interval_s, heartbeat_misses and "
        "drain_timeout_s must be positive; min_rate_rps >= 0");
  }
  if (c->rise_window_s() != 0 &&
      !(c->rise_window_s() >= c->rate_window_s() / 10 &&
        c->rise_window_s() < c->rate_window_s())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "frontend config: rise_window_s (", c->rise_window_s(),
        ") must be 0 (off) or in [rate_window_s / 10, rate_window_s) = [",
        c->rate_window_s() / 10, ", ", c->rate_window_s(), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PolicyOptions> PolicyOptionsFromConfig(
    const FrontendConfig& config) {
  PolicyOptions options;
  options.static_plan = config.static_plan();
  options.standby_shadows = config.standby_shadows();
  // InSS's actor, loaded here once: the configured policy or a live
  // switch to "inss" plans with it. A checkpoint the config names, or one
  // an inss policy needs, must load; otherwise the shipped one is loaded
  // where present.
  auto actor = MlpInssActor::LoadOrShipped(config.inss_checkpoint_path());
  if (actor.ok()) {
    options.inss_actor = *std::move(actor);
  } else if (!config.inss_checkpoint_path().empty() ||
             absl::StartsWith(config.policy(), "inss")) {
    return actor.status();
  }
  options.inss_fallback = config.inss_fallback_policy();
  ASSIGN_OR_RETURN(options.rules, ResolvePlanningRules(config.rules()));
  if (config.interference_profile().empty()) return options;
  InterferenceProfile ip;
  RETURN_IF_ERROR(ReadTextProto(config.interference_profile(), &ip));
  if (ip.linear_coefficients_size() != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat(config.interference_profile(),
                     ": the linear form needs 5 coefficients"));
  }
  options.interference =
      std::make_shared<LinearInterference>(std::vector<double>(
          ip.linear_coefficients().begin(), ip.linear_coefficients().end()));
  return options;
}

absl::Status CheckStaticPlan(const std::string& policy,
                             const PolicyOptions& options,
                             const ModelRepository& repository) {
  std::set<std::string> known;
  for (const std::string& name : repository.ModelNames()) known.insert(name);
  for (const auto& [name, why] : repository.invalid()) known.insert(name);
  RETURN_IF_ERROR(
      StaticPolicy::CheckStaticPlanModels(options.static_plan, known));
  if (policy != "static") return absl::OkStatus();
  return StaticPolicy::CheckStaticPlanServes(options.static_plan,
                                             repository.ModelNames());
}

}  // namespace tessera
