#include "scheduler/abacus_policy.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/policy_registry.h"

namespace tessera {

absl::StatusOr<Plan> AbacusPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  std::vector<const ModelSnapshot*> models;
  for (const ModelSnapshot& m : snapshot.models) {
    if (m.config.segment_count() <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "policy '", name_, "': model '", m.config.name(),
          "' has no segment_count (operator groups run models by range of "
          "segments)"));
    }
    models.push_back(&m);
  }
  std::sort(models.begin(), models.end(),
            [](const ModelSnapshot* a, const ModelSnapshot* b) {
              return a->config.name() < b->config.name();
            });
  const int n = static_cast<int>(models.size());
  const int k = static_cast<int>(snapshot.devices.size());
  if (n > kMaxServicesPerDevice * k) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "policy '", name_, "': ", n, " models need more than ",
        kMaxServicesPerDevice, " per device on ", k, " device(s)"));
  }
  // Devices used: pairs while there are devices for them (the paper's
  // main setting), never more than four models on one.
  const int used =
      n == 0 ? 0
             : std::max((n + kMaxServicesPerDevice - 1) / kMaxServicesPerDevice,
                        std::min(k, (n + 1) / 2));
  Plan plan;
  plan.set_policy(name_);
  plan.set_reason(absl::StrCat(n, " model(s) on ", used,
                               " device(s) at 100 %, ",
                               GpuletScheduler_Name(scheduler_)));
  int next = 0;
  for (int d = 0; d < used; ++d) {
    const DeviceSnapshot& device = snapshot.devices[d];
    // Models left shared evenly over the devices left.
    const int here = (n - next + (used - d) - 1) / (used - d);
    DevicePlan* dp = plan.add_devices();
    dp->set_backend_id(device.backend_id);
    dp->set_device_id(device.device_id);
    GpuletPlan* g = dp->add_gpulets();
    g->set_gpulet_id(
        absl::StrCat(device.backend_id, "/", device.device_id, "/groups"));
    g->set_share_percent(100);
    g->set_scheduler(scheduler_);
    for (int i = 0; i < here; ++i, ++next) {
      ModelAssignment* a = g->add_models();
      a->set_model(models[next]->config.name());
      // A cap only: the frontend forwards each request as it comes.
      a->set_batch_size(std::max(1, models[next]->config.max_batch_size()));
      a->set_rate_rps(models[next]->rate_rps);
    }
  }
  return plan;
}

namespace {

PolicyFactory Factory(std::string name, GpuletScheduler scheduler) {
  return [name, scheduler](const PolicyOptions&)
             -> absl::StatusOr<std::unique_ptr<SchedulingPolicy>> {
    return std::unique_ptr<SchedulingPolicy>(new AbacusPolicy(name, scheduler));
  };
}

}  // namespace

REGISTER_SCHEDULING_POLICY("abacus",
                           Factory("abacus", GPULET_SCHEDULER_ABACUS));
REGISTER_SCHEDULING_POLICY("abacus-fcfs",
                           Factory("abacus-fcfs", GPULET_SCHEDULER_FCFS));
REGISTER_SCHEDULING_POLICY("abacus-sjf",
                           Factory("abacus-sjf", GPULET_SCHEDULER_SJF));
REGISTER_SCHEDULING_POLICY("abacus-edf",
                           Factory("abacus-edf", GPULET_SCHEDULER_EDF));

}  // namespace tessera
