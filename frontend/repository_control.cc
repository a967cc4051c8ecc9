#include "frontend/repository_control.h"

#include "absl/strings/str_cat.h"
#include "scheduler/plan_ids.h"
#include "spdlog/spdlog.h"

namespace tessera {

absl::Status RepositoryControl::SetLoaded(const std::string& name, bool loaded,
                                          absl::Time deadline) {
  if (deps_.repository->Find(name) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no model '", name, "' in the model repository"));
  }
  const std::string reason =
      absl::StrCat("model '", name, loaded ? "' loaded" : "' unloaded");
  deps_.unloaded->Set(name, !loaded);
  // A policy that cannot plan the cluster with the change would leave the
  // request pending forever: refuse it now and undo it.
  PlanCoordinator& coordinator = *deps_.coordinator;
  if (absl::Status s = coordinator.CheckPolicy(*coordinator.policy());
      !s.ok() && !absl::IsUnavailable(s)) {
    deps_.unloaded->Set(name, loaded);
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot ", loaded ? "load" : "unload", " model '", name, "': policy '",
        coordinator.policy()->name(), "' cannot plan the cluster ",
        loaded ? "with" : "without", " it (", s.message(), ")"));
  }
  spdlog::info("{} through the repository API", reason);
  // Ask for a plan until one honours the change: a plan already being made
  // when the change came may not.
  absl::Time ask = absl::InfinitePast();
  while (true) {
    if (stopping_.load()) {
      return absl::UnavailableError("the frontend is stopping");
    }
    const Plan plan = coordinator.current_plan();
    if (plan.epoch() > 0 && PlanServes(plan, name) == loaded) {
      return absl::OkStatus();
    }
    const absl::Time now = deps_.clock->Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          reason, ", but no plan ", loaded ? "serving" : "without",
          " it came in time; the request stands for the next plan"));
    }
    if (now >= ask) {
      deps_.trigger->Request(reason);
      ask = now + absl::Seconds(1);
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

}  // namespace tessera
