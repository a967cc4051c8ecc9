#include "backend/plan_diff.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

// The running proxy can serve `wanted`: same share, models, device, cores
// and scheduler (batch sizes are the frontend's and change freely).
bool SameProcess(const ResidentGpulet& running, const GpuletSpec& wanted) {
  return running.alive &&
         running.spec.plan.share_percent() == wanted.plan.share_percent() &&
         running.spec.ModelNames() == wanted.ModelNames() &&
         running.spec.device_id == wanted.device_id &&
         running.spec.cores == wanted.cores &&
         running.spec.plan.scheduler() == wanted.plan.scheduler();
}

// The models `running` serves and `wanted` does not, when `wanted` is the
// running proxy minus some models (same share, device, cores and the
// batching scheduler; at least one model left); empty otherwise.
std::vector<std::string> DroppedModels(const ResidentGpulet& running,
                                       const GpuletSpec& wanted) {
  if (!running.alive ||
      running.spec.plan.share_percent() != wanted.plan.share_percent() ||
      running.spec.device_id != wanted.device_id ||
      running.spec.cores != wanted.cores ||
      running.spec.plan.scheduler() != GPULET_SCHEDULER_BATCHES ||
      wanted.plan.scheduler() != GPULET_SCHEDULER_BATCHES) {
    return {};
  }
  const std::vector<std::string> have = running.spec.ModelNames();
  const std::vector<std::string> want = wanted.ModelNames();
  if (want.empty() || want.size() >= have.size() ||
      !std::includes(have.begin(), have.end(), want.begin(), want.end())) {
    return {};
  }
  std::vector<std::string> dropped;
  std::set_difference(have.begin(), have.end(), want.begin(), want.end(),
                      std::back_inserter(dropped));
  return dropped;
}

}  // namespace

PlanDiff DiffPlan(const std::vector<ResidentGpulet>& residents,
                  const std::map<std::string, GpuletSpec>& wanted,
                  const std::map<std::string, int64_t>& memory_capacity_bytes) {
  PlanDiff diff;
  std::map<std::string, int64_t> resident_bytes;  // by device, now
  std::map<std::string, const ResidentGpulet*> routable;
  for (const ResidentGpulet& r : residents) {
    resident_bytes[r.spec.device_id] += r.spec.memory_bytes;
    if (r.state == GpuletState::kServing || r.state == GpuletState::kRetiring) {
      routable[r.spec.id()] = &r;
    }
  }
  std::map<std::string, int64_t> new_bytes;  // by device
  for (const auto& [id, spec] : wanted) {
    auto it = routable.find(id);
    if (it != routable.end() && SameProcess(*it->second, spec)) {
      diff.keep.insert(id);
      continue;
    }
    if (it != routable.end()) {
      std::vector<std::string> dropped = DroppedModels(*it->second, spec);
      if (!dropped.empty()) {
        diff.keep.insert(id);
        diff.drop[id] = std::move(dropped);
        continue;
      }
    }
    diff.start.push_back(id);
    new_bytes[spec.device_id] += spec.memory_bytes;
  }
  for (const auto& [device_id, bytes] : new_bytes) {
    auto cap = memory_capacity_bytes.find(device_id);
    if (cap == memory_capacity_bytes.end() || cap->second <= 0 ||
        resident_bytes[device_id] + bytes <= cap->second) {
      continue;
    }
    diff.stop_first_devices.push_back(device_id);
    for (const std::string& id : diff.start) {
      diff.stop_then_start += wanted.at(id).device_id == device_id;
    }
  }
  return diff;
}

absl::Status CheckGpuletsPerDevice(
    const std::map<std::string, GpuletSpec>& wanted, int max_per_device) {
  std::map<std::string, int> per_device;
  for (const auto& [id, spec] : wanted) {
    if (++per_device[spec.device_id] > max_per_device) {
      return absl::InvalidArgumentError(
          absl::StrCat("the plan asks for more than ", max_per_device,
                       " proxy processes on device '", spec.device_id,
                       "' (--max_gpulets_per_device)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera
