#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "config.pb.h"
#include "model_config.pb.h"
#include "plan.pb.h"
#include "profile.pb.h"
#include "scheduler/planning_rules.h"

namespace tessera {

// One device a backend offers to the scheduler.
struct DeviceSnapshot {
  std::string backend_id;
  std::string device_id;
  DeviceKind kind = DEVICE_KIND_UNSPECIFIED;
  int num_cores = 0;         // CPU devices
  int64_t memory_bytes = 0;  // 0 = unlimited
  // Key of the profiles that describe this device ("cpu", "v100", ...).
  std::string profile_key;
  // Partition sizes (percent) the device can make; empty: any size of the
  // policies' default grid (GPUs). A cpu device with C cores can only
  // make multiples of 100/C.
  std::vector<double> allowed_shares;
};

// One servable model.
struct ModelSnapshot {
  ModelConfig config;
  // Observed arrival rate (requests per second).
  double rate_rps = 0;
  // Profiles by device kind ("cpu", "emulated-v100", ...), when known.
  std::map<std::string, ModelProfile> profiles;
};

// Everything a policy may look at. Policies read no clock: `now` is here.
struct ClusterSnapshot {
  absl::Time now;
  std::vector<DeviceSnapshot> devices;
  std::vector<ModelSnapshot> models;
  // The plan in force (epoch 0 and empty when there is none yet).
  Plan current_plan;
};

// A scheduling policy: a pure function from a cluster snapshot to a plan.
// Implementations do no I/O, take no locks and read no clock, so the
// frontend and the simulator run the same decision code. An unschedulable
// snapshot is reported as RESOURCE_EXHAUSTED (or FAILED_PRECONDITION for
// inconsistent input) whose message names the model and the reason.
class PolicyInputs;

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual absl::StatusOr<Plan> Schedule(
      const ClusterSnapshot& snapshot) const = 0;
  // The same plan from `inputs`, which the caller built from `snapshot`
  // with PolicyInputs::FromSnapshot under this policy's shared rules: a
  // caller that runs several policies on one snapshot (tessera's seeds)
  // builds the demands, latency models and their memos once. A policy
  // that plans without PolicyInputs ignores them.
  virtual absl::StatusOr<Plan> ScheduleWithInputs(
      const ClusterSnapshot& snapshot, const PolicyInputs& /*inputs*/) const {
    return Schedule(snapshot);
  }
  virtual std::string name() const = 0;
};

class InssActor;
class InterferenceModel;
class ProfileFits;

// Options handed to policy factories. Grows with the policies.
struct PolicyOptions {
  // Used by the "static" policy.
  Plan static_plan;
  // Plan warm standby proxies where the policy has the notion (igniter:
  // GpuletPlan.standby_share_percent = min(share + 10, 100)).
  bool standby_shadows = false;
  // Interference model interference-aware policies plan with (e.g.
  // "gpulet"); nullptr: none. Shared, immutable.
  std::shared_ptr<const InterferenceModel> interference;
  // Latency-model fits made once from the profiles by the caller
  // (ProfileFits::Build); nullptr: policies fit per plan. Shared,
  // immutable.
  std::shared_ptr<const ProfileFits> fits;
  // The planning rules (proto/policy_rules.proto), resolved: every field
  // set (ResolvePlanningRules). Default: the "tessera" preset.
  PlanningRules rules = PresetRules(RULES_PRESET_TESSERA);
  // "inss" and "inss-ni": the actor they plan with, loaded once by the
  // caller (MlpInssActor::LoadOrShipped; null: they cannot be created),
  // and the policy that plans a snapshot the actor was not trained for
  // (empty: refuse with FAILED_PRECONDITION).
  std::shared_ptr<const InssActor> inss_actor;
  std::string inss_fallback;
};

}  // namespace tessera
