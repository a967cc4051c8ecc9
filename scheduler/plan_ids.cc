#include "scheduler/plan_ids.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tessera {
namespace {

// What makes a gpulet's process: its share, its (sorted) models and how it
// orders their work.
std::string ProcessKey(const GpuletPlan& g) {
  std::vector<std::string> models;
  for (const ModelAssignment& a : g.models()) models.push_back(a.model());
  std::sort(models.begin(), models.end());
  return absl::StrCat(g.share_percent(), "|", absl::StrJoin(models, ","), "|",
                      g.scheduler());
}

}  // namespace

int AssignGpuletIds(const Plan& current, Plan* next) {
  // (backend, device, process key) -> ids of current gpulets, unused yet.
  std::map<std::string, std::vector<std::string>> available;
  for (const DevicePlan& d : current.devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      available[absl::StrCat(d.backend_id(), "/", d.device_id(), "/",
                             ProcessKey(g))]
          .push_back(g.gpulet_id());
    }
  }
  int fresh = 0;
  std::set<std::string> taken;  // ids given out in `next`
  for (DevicePlan& d : *next->mutable_devices()) {
    for (GpuletPlan& g : *d.mutable_gpulets()) {
      auto it = available.find(
          absl::StrCat(d.backend_id(), "/", d.device_id(), "/", ProcessKey(g)));
      if (it != available.end() && !it->second.empty()) {
        g.set_gpulet_id(it->second.back());
        it->second.pop_back();
      } else {
        ++fresh;
        // The policy's own id in the first plan (static plans keep their
        // names); afterwards ids are never reused, so an id names one
        // process for the life of the cluster.
        if (current.epoch() > 0 || g.gpulet_id().empty() ||
            taken.count(g.gpulet_id())) {
          g.set_gpulet_id(absl::StrCat(d.backend_id(), "/", d.device_id(), "/e",
                                       next->epoch(), ".", fresh));
        }
      }
      taken.insert(g.gpulet_id());
    }
  }
  return fresh;
}

bool PlanServes(const Plan& plan, const std::string& model) {
  for (const DevicePlan& d : plan.devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      for (const ModelAssignment& a : g.models()) {
        if (a.model() == model) return true;
      }
    }
  }
  return false;
}

double PlannedRateRps(const Plan& plan, const std::string& model) {
  double rate = 0;
  for (const DevicePlan& d : plan.devices()) {
    for (const GpuletPlan& g : d.gpulets()) {
      for (const ModelAssignment& a : g.models()) {
        if (a.model() == model) rate += a.rate_rps();
      }
    }
  }
  return rate;
}

}  // namespace tessera
