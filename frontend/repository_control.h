#pragma once

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/model_repository.h"
#include "frontend/model_control.h"
#include "frontend/plan_coordinator.h"
#include "frontend/replan_trigger.h"
#include "frontend/unloaded_models.h"

namespace tessera {

// The KServe v2 repository RPCs load and unload: marks a model (un)loaded
// for the planner's snapshots and the data path, asks for re-plans until a
// plan honours the change, and refuses at once a change the policy in force
// cannot plan. Thread-safe.
class RepositoryControl final : public ModelControl {
 public:
  struct Deps {
    const ModelRepository* repository;
    UnloadedModels* unloaded;
    PlanCoordinator* coordinator;
    ReplanTrigger* trigger;
    const Clock* clock;
  };
  // Every dependency must outlive this object.
  explicit RepositoryControl(Deps deps) : deps_(deps) {}

  absl::Status UnloadModel(const std::string& name,
                           absl::Time deadline) override {
    return SetLoaded(name, false, deadline);
  }
  absl::Status LoadModel(const std::string& name,
                         absl::Time deadline) override {
    return SetLoaded(name, true, deadline);
  }
  bool IsUnloaded(const std::string& name) const override {
    return deps_.unloaded->Contains(name);
  }
  // Pending and later calls return UNAVAILABLE (the frontend is stopping).
  void Stop() { stopping_.store(true); }

 private:
  // Marks `name` (un)loaded and waits for a plan that (does not) serve it.
  absl::Status SetLoaded(const std::string& name, bool loaded,
                         absl::Time deadline);

  const Deps deps_;
  std::atomic<bool> stopping_{false};
};

}  // namespace tessera
