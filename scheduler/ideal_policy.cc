#include "scheduler/ideal_policy.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/policy_registry.h"

namespace tessera {
namespace {

// Per-GPU layouts: whole, or a two-way split (first slot the smaller).
const std::vector<std::vector<double>>& GpuLayouts() {
  static const std::vector<std::vector<double>> layouts = {
      {100}, {20, 80}, {40, 60}, {50, 50}};
  return layouts;
}

struct SlotRef {
  int gpu;
  int slot;
};

class Search {
 public:
  Search(const std::vector<ModelDemand>& demands,
         const std::vector<const DeviceSnapshot*>& gpus,
         const InterferenceModel* intf, const GpuletRules& charge)
      : demands_(demands), gpus_(gpus), intf_(intf), charge_(charge) {}

  // Tries every multiset of `n` layouts; returns true with `best_` set.
  bool Run(int n) {
    std::vector<int> choice(n, 0);
    std::vector<std::pair<double, std::vector<GpuLayout>>> found;
    std::function<bool(int, int)> layouts = [&](int g, int min_kind) {
      if (g == n) {
        std::vector<GpuLayout> gpus;
        std::vector<SlotRef> slots;
        for (int i = 0; i < n; ++i) {
          gpus.emplace_back(gpus_[i]);
          gpus.back().ApplyChargeRules(charge_);
          const auto& shares = GpuLayouts()[choice[i]];
          if (shares.size() == 2) gpus.back().Split(shares[0]);
          for (int s = 0; s < static_cast<int>(shares.size()); ++s) {
            slots.push_back({i, s});
          }
        }
        if (Assign(0, &gpus, slots)) {
          best_ = gpus;
          return true;
        }
        return false;
      }
      for (int k = min_kind; k < static_cast<int>(GpuLayouts().size()); ++k) {
        choice[g] = k;
        if (layouts(g + 1, k)) return true;
      }
      return false;
    };
    return layouts(0, 0);
  }

  const std::vector<GpuLayout>& best() const { return best_; }

 private:
  // How `rate` may be split over gpulets that sustain `caps` alone: in
  // proportion to the caps, and (for two or more) every gpulet but one
  // saturated at its cap with the rest on that one (gpulet's saturated
  // gpulets plus a residue).
  static std::vector<std::vector<double>> Splits(
      double rate, const std::vector<double>& caps) {
    double total = 0;
    for (double c : caps) total += c;
    std::vector<std::vector<double>> out(1);
    for (double c : caps) out[0].push_back(rate * c / total);
    if (caps.size() < 2) return out;
    for (size_t residue = 0; residue < caps.size(); ++residue) {
      const double rest = rate - (total - caps[residue]);
      if (rest <= 0) continue;  // the others alone carry it
      std::vector<double> split = caps;
      split[residue] = rest;
      out.push_back(std::move(split));
    }
    return out;
  }

  // Adds slices of `d` at `rates` to the gpulets `members`; false when one
  // becomes infeasible or already holds three models.
  bool Place(const ModelDemand& d, const std::vector<int>& members,
             const std::vector<double>& rates,
             const std::vector<SlotRef>& slots, std::vector<GpuLayout>* gpus) {
    for (size_t k = 0; k < members.size(); ++k) {
      const SlotRef& r = slots[members[k]];
      auto& gpu = (*gpus)[r.gpu];
      auto& slot = gpu.slots()[r.slot];
      if (rates[k] <= 0 || slot.slices.size() >= 3) return false;
      slot.slices.push_back(Slice{&d, rates[k]});
      if (!gpu.Resolve(intf_)) return false;
    }
    return true;
  }

  // Assigns model m onward; true when every model is placed feasibly.
  // Each model takes a non-empty set of gpulets (smaller sets first), its
  // rate split by Splits.
  bool Assign(size_t m, std::vector<GpuLayout>* gpus,
              const std::vector<SlotRef>& slots) {
    if (m == demands_.size()) return true;
    if (++nodes_ > kNodeBudget) return false;
    const ModelDemand& d = demands_[m];
    const int n = static_cast<int>(slots.size());
    std::vector<std::vector<int>> subsets;
    for (int mask = 1; mask < (1 << n); ++mask) {
      std::vector<int> members;
      for (int i = 0; i < n; ++i) {
        if (mask & (1 << i)) members.push_back(i);
      }
      subsets.push_back(members);
    }
    std::stable_sort(
        subsets.begin(), subsets.end(),
        [](const auto& a, const auto& b) { return a.size() < b.size(); });
    for (const auto& members : subsets) {
      std::vector<double> caps;
      double total = 0;
      for (int i : members) {
        const SlotRef& r = slots[i];
        caps.push_back(SaturatedThroughput(
            d, (*gpus)[r.gpu].slots()[r.slot].share_percent));
        total += caps.back();
      }
      // Prune: the set cannot carry the rate even with nothing else on it.
      if (total < d.rate_rps) continue;
      for (const std::vector<double>& rates : Splits(d.rate_rps, caps)) {
        std::vector<GpuLayout> saved = *gpus;
        if (Place(d, members, rates, slots, gpus) &&
            Assign(m + 1, gpus, slots)) {
          return true;
        }
        *gpus = std::move(saved);
        if (nodes_ > kNodeBudget) return false;
      }
    }
    return false;
  }

 public:
  // Search nodes (partial assignments) allowed per Schedule call.
  static constexpr int64_t kNodeBudget = 100000;
  bool exhausted() const { return nodes_ > kNodeBudget; }

 private:
  int64_t nodes_ = 0;
  const std::vector<ModelDemand>& demands_;
  const std::vector<const DeviceSnapshot*>& gpus_;
  const InterferenceModel* intf_;
  const GpuletRules& charge_;  // the interference charge, as gpulet's
  std::vector<GpuLayout> best_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> IdealPolicy::Create(
    const PolicyOptions& options) {
  return std::unique_ptr<SchedulingPolicy>(new IdealPolicy(options));
}

absl::StatusOr<Plan> IdealPolicy::Schedule(
    const ClusterSnapshot& snapshot) const {
  ASSIGN_OR_RETURN(auto inputs, PolicyInputs::FromSnapshot(snapshot, options_));
  const auto& demands = inputs->demands();
  const auto& gpus = inputs->gpus();
  if (static_cast<int>(demands.size()) > kMaxModels) {
    return absl::FailedPreconditionError(
        absl::StrCat("ideal: ", demands.size(),
                     " models is beyond the exhaustive "
                     "search's limit of ",
                     kMaxModels));
  }
  const int max_n = std::min<int>(gpus.size(), kMaxGpus);
  if (demands.empty()) return BuildPlan({}, "ideal", "no load");
  for (int n = 1; n <= max_n; ++n) {
    Search search(demands, gpus, options_.interference.get(),
                  options_.rules.gpulet());
    if (search.Run(n)) {
      return BuildPlan(
          search.best(), "ideal",
          absl::StrCat("exhaustive search: fits on ", n, " GPU(s)"));
    }
    if (search.exhausted()) {
      return absl::DeadlineExceededError(
          absl::StrCat("ideal: the exhaustive search exceeded its budget of ",
                       Search::kNodeBudget, " nodes at ", n,
                       " GPU(s); the result would not be exhaustive"));
    }
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "ideal: no layout and assignment of the ", demands.size(),
      " model(s) fits on ", max_n, " GPU(s)",
      static_cast<int>(gpus.size()) > kMaxGpus
          ? absl::StrCat(" (search limited to ", kMaxGpus, " GPUs)")
          : ""));
}

REGISTER_SCHEDULING_POLICY("ideal", IdealPolicy::Create);

}  // namespace tessera
