#include "scheduler/share_fill.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/base/internal/raw_logging.h"

#include "scheduler/plan_ids.h"

namespace tessera {
namespace {

constexpr double kShareEpsilon = 1e-6;

// The share a device's gpulets with models hold.
double ShareSum(const DevicePlan& device) {
  double sum = 0;
  for (const GpuletPlan& g : device.gpulets()) {
    if (g.models_size() > 0) sum += g.share_percent();
  }
  return sum;
}

// Grows `g` to `share`; an iGniter standby (its shadow process's share)
// keeps its lead over the share, within 100 %.
void Grow(GpuletPlan* g, double share) {
  if (g->standby_share_percent() > 0) {
    g->set_standby_share_percent(std::min(
        100.0, g->standby_share_percent() + share - g->share_percent()));
  }
  g->set_share_percent(share);
}

}  // namespace

double ShareFill::GridAtMost(double share) const {
  double best = 0;
  for (double s : grid_) {
    if (s <= share + kShareEpsilon) best = s;
  }
  return best;
}

double ShareFill::RoundDown(double share) const {
  return whole_percents_ ? std::floor(share + kShareEpsilon)
                         : GridAtMost(share);
}

int ShareFill::GrowInProportion(const std::vector<bool>& growable,
                                DevicePlan* device) const {
  double fixed = 0, grown = 0;
  for (int i = 0; i < device->gpulets_size(); ++i) {
    const GpuletPlan& g = device->gpulets(i);
    if (g.models_size() == 0) continue;
    (growable[i] ? grown : fixed) += g.share_percent();
  }
  if (grown <= 0 || fixed + grown >= 100 - kShareEpsilon) return 0;
  const double factor = (100 - fixed) / grown;
  int count = 0;
  for (int i = 0; i < device->gpulets_size(); ++i) {
    GpuletPlan* g = device->mutable_gpulets(i);
    if (!growable[i] || g->models_size() == 0) continue;
    const double share = RoundDown(g->share_percent() * factor);
    if (share > g->share_percent() + kShareEpsilon) {
      Grow(g, share);
      ++count;
    }
  }
  return count;
}

ShareFill::Result ShareFill::Fill(const Plan& plan, const Plan& current) const {
  const std::vector<std::vector<bool>> growable = Growable(plan, current);
  // The room of the plan as it is, measured only when needed.
  std::optional<double> room;
  auto room_as_is = [&]() {
    if (!room) room = check_->ScaleMargin(plan, max_scale_, steps_);
    return *room;
  };
  // Every GPU at once, then (if that lowers the room) only the GPUs with
  // one new gpulet.
  for (bool several : {true, false}) {
    Plan grown = plan;
    for (int d = 0; d < plan.devices_size(); ++d) {
      if (several ||
          std::count(growable[d].begin(), growable[d].end(), true) == 1) {
        GrowOnGrid(growable[d], grown.mutable_devices(d));
      }
    }
    const int raised = Grown(plan, grown);
    if (raised == 0) continue;
    const double m = check_->ScaleMargin(grown, max_scale_, steps_);
    if (m <= 0) continue;
    // The plan as it is holds more only if it passes one bisection step
    // above m (one check; its room is measured in full only then).
    const double step = (max_scale_ - 1) / std::ldexp(1.0, steps_);
    if (room || (m < max_scale_ && check_->Check(plan, m + step).ok())) {
      if (m < room_as_is()) continue;
    }
    absl::StatusOr<Plan> rebatched = check_->Rebatch(grown);
    // The room is at least 1, so the check passes at today's rates.
    ABSL_RAW_CHECK(rebatched.ok(), "a filled plan fails the shared check");
    return Result{*std::move(rebatched), m, raised};
  }
  Result result{plan, room_as_is(), 0};
  if (result.margin <= 0) {
    for (int d = 0; d < plan.devices_size(); ++d) {
      result.raised +=
          GrowInProportion(growable[d], result.plan.mutable_devices(d));
    }
  }
  return result;
}

void ShareFill::GrowOnGrid(const std::vector<bool>& growable,
                           DevicePlan* device) const {
  std::vector<double> start(device->gpulets_size());
  for (int i = 0; i < device->gpulets_size(); ++i) {
    start[i] = device->gpulets(i).share_percent();
  }
  while (true) {
    const double free_percent = 100 - ShareSum(*device);
    int best = -1;
    double best_next = 0;
    for (int i = 0; i < device->gpulets_size(); ++i) {
      if (!growable[i]) continue;
      const double share = device->gpulets(i).share_percent();
      double next = 0;
      for (double s : grid_) {
        if (s > share + kShareEpsilon) {
          next = s;
          break;
        }
      }
      if (next == 0 || next - share > free_percent + kShareEpsilon) continue;
      // The gpulet grown least so far, relative to its start.
      if (best < 0 || share / start[i] <
                          device->gpulets(best).share_percent() / start[best]) {
        best = i;
        best_next = next;
      }
    }
    if (best < 0) return;
    Grow(device->mutable_gpulets(best), best_next);
  }
}

std::vector<std::vector<bool>> ShareFill::Growable(const Plan& plan,
                                                   const Plan& current) {
  const std::vector<bool> fresh = NewGpulets(current, plan);
  std::vector<std::vector<bool>> growable;
  size_t k = 0;  // index in `fresh`
  for (const DevicePlan& device : plan.devices()) {
    growable.emplace_back();
    for (const GpuletPlan& g : device.gpulets()) {
      growable.back().push_back(fresh[k++] && g.models_size() > 0);
    }
  }
  return growable;
}

int ShareFill::Grown(const Plan& before, const Plan& after) {
  int grown = 0;
  for (int d = 0; d < before.devices_size(); ++d) {
    for (int i = 0; i < before.devices(d).gpulets_size(); ++i) {
      grown += after.devices(d).gpulets(i).share_percent() >
               before.devices(d).gpulets(i).share_percent() + kShareEpsilon;
    }
  }
  return grown;
}

}  // namespace tessera
