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

std::vector<std::string> SortedModels(const GpuletPlan& g) {
  std::vector<std::string> models;
  for (const ModelAssignment& a : g.models()) models.push_back(a.model());
  std::sort(models.begin(), models.end());
  models.erase(std::unique(models.begin(), models.end()), models.end());
  return models;
}

// `next` is `old` less some models: same share, the batching scheduler, at
// least one model left (the backend's DiffPlan drops models in place only
// then).
bool IsShrunk(const GpuletPlan& old, const GpuletPlan& next) {
  if (old.share_percent() != next.share_percent() ||
      old.scheduler() != GPULET_SCHEDULER_BATCHES ||
      next.scheduler() != GPULET_SCHEDULER_BATCHES) {
    return false;
  }
  const std::vector<std::string> have = SortedModels(old);
  const std::vector<std::string> want = SortedModels(next);
  return !want.empty() && want.size() < have.size() &&
         std::includes(have.begin(), have.end(), want.begin(), want.end());
}

// AssignGpuletIds; `fresh`, if not null, gets one flag per gpulet of
// `next` (devices in order, then gpulets): whether it is new.
int AssignIds(const Plan& current, Plan* next, std::vector<bool>* fresh_flags) {
  // (backend, device, process key) -> ids of current gpulets, unused yet.
  std::map<std::string, std::vector<std::string>> available;
  // (backend, device) -> current gpulets, for the second pass.
  std::map<std::string, std::vector<const GpuletPlan*>> by_device;
  for (const DevicePlan& d : current.devices()) {
    const std::string device = absl::StrCat(d.backend_id(), "/", d.device_id());
    for (const GpuletPlan& g : d.gpulets()) {
      available[absl::StrCat(device, "/", ProcessKey(g))].push_back(
          g.gpulet_id());
      by_device[device].push_back(&g);
    }
  }
  std::set<std::string> taken;  // ids given out in `next`
  std::vector<std::pair<const DevicePlan*, GpuletPlan*>> unmatched;
  for (DevicePlan& d : *next->mutable_devices()) {
    for (GpuletPlan& g : *d.mutable_gpulets()) {
      auto it = available.find(
          absl::StrCat(d.backend_id(), "/", d.device_id(), "/", ProcessKey(g)));
      if (it != available.end() && !it->second.empty()) {
        g.set_gpulet_id(it->second.back());
        it->second.pop_back();
        taken.insert(g.gpulet_id());
      } else {
        unmatched.push_back({&d, &g});
      }
    }
  }
  // A gpulet that is a current one less some models (unloaded) keeps its
  // id: its proxy drops those models and serves on (the backend's
  // DiffPlan), so the id still names one process.
  for (auto& [d, g] : unmatched) {
    for (const GpuletPlan* old :
         by_device[absl::StrCat(d->backend_id(), "/", d->device_id())]) {
      if (!taken.count(old->gpulet_id()) && IsShrunk(*old, *g)) {
        g->set_gpulet_id(old->gpulet_id());
        taken.insert(old->gpulet_id());
        g = nullptr;  // matched
        break;
      }
    }
  }
  int fresh = 0;
  std::set<const GpuletPlan*> fresh_gpulets;
  for (auto& [d, g] : unmatched) {
    if (g == nullptr) continue;
    ++fresh;
    fresh_gpulets.insert(g);
    // The policy's own id in the first plan (static plans keep their
    // names); afterwards ids are never reused, so an id names one process
    // for the life of the cluster.
    if (current.epoch() > 0 || g->gpulet_id().empty() ||
        taken.count(g->gpulet_id())) {
      g->set_gpulet_id(absl::StrCat(d->backend_id(), "/", d->device_id(), "/e",
                                    next->epoch(), ".", fresh));
    }
    taken.insert(g->gpulet_id());
  }
  if (fresh_flags != nullptr) {
    fresh_flags->clear();
    for (const DevicePlan& d : next->devices()) {
      for (const GpuletPlan& g : d.gpulets()) {
        fresh_flags->push_back(fresh_gpulets.count(&g) > 0);
      }
    }
  }
  return fresh;
}

}  // namespace

int AssignGpuletIds(const Plan& current, Plan* next) {
  return AssignIds(current, next, nullptr);
}

std::vector<bool> NewGpulets(const Plan& current, const Plan& next) {
  Plan copy = next;
  std::vector<bool> fresh;
  AssignIds(current, &copy, &fresh);
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
