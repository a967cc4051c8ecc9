#include "scheduler/gpulet_placer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "scheduler/time_share_solver.h"

namespace tessera {
namespace {

constexpr int kMaxModelsPerGpulet = 3;
// A saturated newcomer shrunk to fit beside its neighbour keeps at least
// this fraction of the rate it would serve alone.
constexpr double kMinSaturatedFraction = 0.25;

// The smallest allowed partition that serves `slice` alone; 0 if none.
double MinRequiredPartition(const Slice& slice,
                            const std::vector<double>& grid) {
  for (double p : grid) {
    if (SoloFits(*slice.demand, slice.rate_rps, p)) return p;
  }
  return 0;
}

bool Holds(const GpuLayout::Slot& slot, const ModelDemand* m) {
  for (const Slice& s : slot.slices) {
    if (s.demand == m) return true;
  }
  return false;
}

}  // namespace

std::vector<const ModelDemand*> GpuletPlacer::PaperOrder(
    const std::vector<ModelDemand>& demands) {
  std::vector<const ModelDemand*> order;
  for (const ModelDemand& m : demands) order.push_back(&m);
  std::stable_sort(order.begin(), order.end(),
                   [](const ModelDemand* a, const ModelDemand* b) {
                     return a->rate_rps * a->slo_ms < b->rate_rps * b->slo_ms;
                   });
  return order;
}

double GpuletPlacer::MaxEfficientPartition(const ModelDemand& m,
                                           const std::vector<double>& grid,
                                           GpuletKneeRule rule) {
  if (rule == GPULET_KNEE_RULE_PER_SHARE) {
    double best = 0, p_eff = 0;
    for (double p : grid) {
      const double per_share = SaturatedThroughput(m, p) / p;
      if (per_share > best) {
        best = per_share;
        p_eff = p;
      }
    }
    return p_eff > 0 ? p_eff : 100;
  }
  double best_score = 0, p_eff = 0;
  for (size_t i = 0; i + 1 < grid.size(); ++i) {
    const double pair[2] = {grid[i], grid[i + 1]};
    if (pair[1] >= 100) break;
    const double lo = SaturatedThroughput(m, pair[0]);
    const double hi = SaturatedThroughput(m, pair[1]);
    if (hi <= 0) continue;
    if (lo > 0 && hi / lo < 1.05) continue;
    const double score = (hi - lo) / (pair[1] - pair[0]);
    if (score > best_score) {
      best_score = score;
      p_eff = pair[1];
    }
  }
  if (p_eff == 0) {
    for (double p : grid) {
      if (SaturatedThroughput(m, p) > 0) return p;
    }
    return 100;
  }
  return p_eff;
}

bool GpuletPlacer::Check(GpuLayout* trial, size_t slot, const Context& ctx,
                         Shortfalls* shortfalls) const {
  if (interference_ == nullptr) return trial->ResolveSlot(slot, nullptr);
  switch (rules_.interference_check()) {
    case GPULET_INTERFERENCE_CHECK_STRICT:
      return trial->Resolve(interference_);
    case GPULET_INTERFERENCE_CHECK_ARTIFACT:
      return CheckArtifact(trial, slot, ctx, shortfalls);
    default:  // PAPER
      return trial->ResolveSlot(slot, interference_);
  }
}

bool GpuletPlacer::CheckArtifact(GpuLayout* trial, size_t slot,
                                 const Context& ctx,
                                 Shortfalls* shortfalls) const {
  GpuLayout whole = *trial;
  if (whole.Resolve(interference_)) {
    *trial = std::move(whole);
    return true;
  }
  // The newcomer first, beside the residents at their current batches.
  if (!trial->ResolveSlot(slot, interference_)) return false;
  const double min_fraction = rules_.artifact_min_rate_fraction();
  Shortfalls moved;
  for (size_t i = 0; i < trial->slots().size(); ++i) {
    GpuLayout::Slot& resident = trial->slots()[i];
    if (i == slot || resident.free()) continue;
    if (trial->ResolveSlot(i, interference_)) continue;
    // The resident breaks beside the newcomer: keep the largest fraction of
    // its rate it sustains (each model shrunk at most once).
    for (const Slice& s : resident.slices) {
      if (ctx.shrunk.count(s.demand)) return false;
    }
    const std::vector<Slice> original = resident.slices;
    auto feasible = [&](double f) {
      for (size_t j = 0; j < original.size(); ++j) {
        trial->slots()[i].slices[j].rate_rps = original[j].rate_rps * f;
      }
      return trial->ResolveSlot(i, interference_);
    };
    if (!feasible(min_fraction)) return false;
    double lo = min_fraction, hi = 1;
    for (int it = 0; it < 10; ++it) {
      const double mid = (lo + hi) / 2;
      (feasible(mid) ? lo : hi) = mid;
    }
    feasible(lo);
    for (const Slice& s : original) {
      moved[s.demand] += s.rate_rps * (1 - lo);
    }
  }
  // The newcomer again, beside the residents' new batches.
  if (!trial->ResolveSlot(slot, interference_)) return false;
  for (const auto& [m, rate] : moved) (*shortfalls)[m] += rate;
  return true;
}

bool GpuletPlacer::TryMerge(const Slice& slice, Context* ctx) const {
  // Cheap necessary conditions first (the merged load stays below 1; the
  // round, which only grows, stays within every SLO), then candidates
  // fullest first, stopping at the first feasible merge.
  struct Candidate {
    double occupancy;
    size_t gpu, slot;
  };
  std::vector<Candidate> candidates;
  const ModelDemand& m = *slice.demand;
  std::vector<GpuLayout>& layouts = *ctx->layouts;
  for (size_t g = 0; g < layouts.size(); ++g) {
    const auto& slots = layouts[g].slots();
    for (size_t s = 0; s < slots.size(); ++s) {
      const GpuLayout::Slot& slot = slots[s];
      if (slot.free() || slot.pinned ||
          static_cast<int>(slot.slices.size()) >= kMaxModelsPerGpulet ||
          slot.schedule.occupancy >= 1 || Holds(slot, &m)) {
        continue;
      }
      const double p = slot.share_percent;
      double load = 0, round = 0, min_slo = m.slo_ms;
      for (size_t j = 0; j < slot.slices.size(); ++j) {
        const int b = slot.schedule.batches[j];
        load +=
            slot.slices[j].rate_rps * slot.schedule.exec_ms[j] / (1000.0 * b);
        round += slot.schedule.exec_ms[j];
        min_slo = std::min(min_slo, slot.slices[j].demand->slo_ms);
      }
      const int mb = m.max_batch;
      load += slice.rate_rps * PlannedLatency(m, mb, p) / (1000.0 * mb);
      round += PlannedLatency(m, 1, p);
      if (load >= 1 || 2 * round > min_slo) continue;
      candidates.push_back({slot.schedule.occupancy, g, s});
    }
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     return a.occupancy > b.occupancy;
                   });
  // GpuletRules.merge_attempts: with hundreds of gpulets, trying every
  // one makes planning quadratic (the paper tries all: 0).
  const size_t attempts = static_cast<size_t>(rules_.merge_attempts());
  if (attempts > 0 && candidates.size() > attempts) {
    candidates.resize(attempts);
  }
  for (const Candidate& c : candidates) {
    GpuLayout trial = layouts[c.gpu];
    trial.slots()[c.slot].slices.push_back(slice);
    Shortfalls moved;
    if (!Check(&trial, c.slot, *ctx, &moved)) continue;
    layouts[c.gpu] = std::move(trial);
    for (const auto& [d, rate] : moved) {
      ctx->shortfalls[d] += rate;
      ctx->shrunk[d] = true;
    }
    return true;
  }
  return false;
}

bool GpuletPlacer::Place(Slice slice, double want, bool saturated,
                         double remaining, Context* ctx,
                         double* placed_rate) const {
  *placed_rate = slice.rate_rps;
  if (!saturated && TryMerge(slice, ctx)) return true;
  // The best-fitting free slot, smallest first; whole GPUs are split
  // unless the layouts are fixed.
  struct Candidate {
    double size;
    size_t gpu, slot;
  };
  std::vector<Candidate> free;
  std::vector<GpuLayout>& layouts = *ctx->layouts;
  for (size_t g = 0; g < layouts.size(); ++g) {
    const auto& slots = layouts[g].slots();
    for (size_t s = 0; s < slots.size(); ++s) {
      if (slots[s].free() && slots[s].share_percent >= want) {
        free.push_back({slots[s].share_percent, g, s});
      }
    }
  }
  std::stable_sort(
      free.begin(), free.end(),
      [](const Candidate& a, const Candidate& b) { return a.size < b.size; });
  for (const Candidate& c : free) {
    GpuLayout base = layouts[c.gpu];
    size_t slot = c.slot;
    if (!ctx->fixed && c.size == 100 && want < 100 &&
        base.slots().size() == 1) {
      slot = base.Split(want);
    }
    Slice placed = slice;
    const double slot_share = base.slots()[slot].share_percent;
    if (saturated && slot_share > want) {
      // A free slot larger than p_eff is used whole: let the saturated
      // gpulet serve what the slot can, rather than waste the difference
      // (the digest's pitfall 5).
      placed.rate_rps =
          std::min(remaining, SaturatedThroughput(*slice.demand, slot_share));
      // Resized, it is no longer one of its equal peers.
      if (placed.rate_rps != slice.rate_rps) placed.arrival_spacing = 1;
    }
    GpuLayout trial = base;
    trial.slots()[slot].slices = {placed};
    Shortfalls moved;
    if (!Check(&trial, slot, *ctx, &moved)) {
      if (!saturated || interference_ == nullptr) continue;
      // Sized solo, the saturated gpulet is too slow beside its
      // neighbour: serve the largest rate it sustains there.
      double lo = 0, hi = placed.rate_rps;
      for (int i = 0; i < 12; ++i) {
        const double mid = (lo + hi) / 2;
        GpuLayout t = base;
        t.slots()[slot].slices = {Slice{slice.demand, mid}};
        Shortfalls m;
        (Check(&t, slot, *ctx, &m) ? lo : hi) = mid;
      }
      if (lo < kMinSaturatedFraction * placed.rate_rps) continue;
      placed.rate_rps = lo;
      placed.arrival_spacing = 1;
      trial = base;
      trial.slots()[slot].slices = {placed};
      moved.clear();
      if (!Check(&trial, slot, *ctx, &moved)) continue;
    }
    layouts[c.gpu] = std::move(trial);
    for (const auto& [d, rate] : moved) {
      ctx->shortfalls[d] += rate;
      ctx->shrunk[d] = true;
    }
    *placed_rate = placed.rate_rps;
    return true;
  }
  return false;
}

bool GpuletPlacer::PlaceInLeftover(const ModelDemand& m, double want,
                                   double remaining, Context* ctx,
                                   double* placed_rate) const {
  // The free sizes below `want`, largest first.
  std::vector<double> sizes;
  for (const GpuLayout& layout : *ctx->layouts) {
    for (const auto& slot : layout.slots()) {
      if (slot.free() && slot.share_percent < want) {
        sizes.push_back(slot.share_percent);
      }
    }
  }
  std::sort(sizes.begin(), sizes.end(), std::greater<double>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (double size : sizes) {
    const double t = SaturatedThroughput(m, size);
    if (t <= 0) continue;
    const Slice slice{&m, std::min(remaining, t)};
    if (Place(slice, size, /*saturated=*/true, remaining, ctx, placed_rate)) {
      return true;
    }
  }
  return false;
}

bool GpuletPlacer::OneGpuletIsSmaller(const ModelDemand& m, double rate,
                                      double p_eff,
                                      const std::vector<double>& grid,
                                      double* share) const {
  if (!rules_.one_gpulet_when_smaller()) return false;
  const double one = MinRequiredPartition(Slice{&m, rate}, grid);
  if (one == 0) return false;
  // The share the paper's path takes: whole saturated p_eff gpulets, then
  // the residue's smallest partition.
  const double t = SaturatedThroughput(m, p_eff);
  const double saturated = std::floor(rate / t);
  const double residue = rate - saturated * t;
  double split = saturated * p_eff;
  if (residue > rules_.residue_slack_rps()) {
    split += MinRequiredPartition(Slice{&m, residue}, grid);
  }
  if (one >= split) return false;
  *share = one;
  return true;
}

bool GpuletPlacer::EqualSplitIsSmaller(const ModelDemand& m, double rate,
                                       double p_eff,
                                       const std::vector<double>& grid,
                                       int* count, double* per_gpulet,
                                       double* share) {
  const double t1 = SaturatedThroughput(m, p_eff);
  if (t1 <= 0 || rate <= t1 || !PlansRotation(m)) return false;
  // The paper's split, its saturated gpulets at their rotation's spacing.
  double t = 0;
  RotationSpacing(m, rate, p_eff, &t);
  const double saturated = std::floor(rate / t);
  const double residue = rate - saturated * t;
  double best = saturated * p_eff;
  if (residue > 1e-9) {
    const double p = MinRequiredPartition(Slice{&m, residue}, grid);
    best = p > 0 ? best + p : std::numeric_limits<double>::infinity();
  }
  bool found = false;
  std::vector<double> shares = {p_eff};
  if (p_eff != 100) shares.push_back(100);
  for (double p : shares) {
    const double tp = SaturatedThroughput(m, p);
    if (tp <= 0) continue;
    // At most what its own Poisson streams would need, and less share than
    // the best so far.
    int most = static_cast<int>(std::ceil(rate / tp - 1e-9));
    if (std::isfinite(best)) {
      most = std::min(most, static_cast<int>(std::ceil(best / p - 1e-9)) - 1);
    }
    const int n = EvenSplitCount(m, rate, p, most);
    if (n == 0) continue;
    best = n * p;
    *count = n;
    *per_gpulet = rate / n;
    *share = p;
    found = true;
  }
  return found;
}

absl::Status GpuletPlacer::PlaceRate(const ModelDemand& m, double rate,
                                     Context* ctx) const {
  const double p_eff = MaxEfficientPartition(m, *ctx->grid, ctx->knee);
  // A model's first gpulet is always placed; after it, a remainder at or
  // below the slack gets none (the artifact's TRP_SLACK).
  bool has_gpulet = rate < m.rate_rps - 1e-9;
  double remaining = rate;
  // n equal gpulets (of p_eff or whole GPUs), each dealt every n-th
  // request, where that takes less share than saturated gpulets and a
  // residue (EqualSplitIsSmaller).
  int count = 0;
  double per = 0, share = 0;
  if (ctx->rotation &&
      EqualSplitIsSmaller(m, rate, p_eff, *ctx->grid, &count, &per, &share)) {
    *ctx->rotated = true;
    // Where they find no room, the paper's split below (best fit).
    const std::vector<GpuLayout> layouts = *ctx->layouts;
    const Shortfalls shortfalls = ctx->shortfalls;
    const auto shrunk = ctx->shrunk;
    double left = rate;
    bool placed_all = true;
    for (int i = 0; i < count && placed_all; ++i) {
      const Slice slice{&m, per, std::min(count, kBatchQueueMaxSpacing)};
      double placed_rate = 0;
      placed_all =
          Place(slice, share, /*saturated=*/true, per, ctx, &placed_rate);
      left -= placed_rate;
    }
    if (placed_all) {
      remaining = left;
      has_gpulet = true;
      if (remaining <= rules_.residue_slack_rps()) return absl::OkStatus();
    } else {
      *ctx->layouts = layouts;
      ctx->shortfalls = shortfalls;
      ctx->shrunk = shrunk;
    }
  }
  // Saturated gpulets sized for the router's rotation over them: k of
  // them or more at one rate, each dealt every k-th request or rarer.
  double rotation_rps = 0;
  const int spacing =
      ctx->rotation ? RotationSpacing(m, rate, p_eff, &rotation_rps) : 1;
  if (spacing > 1) *ctx->rotated = true;
  while (remaining > 1e-9 &&
         !(has_gpulet && remaining <= rules_.residue_slack_rps())) {
    const double t = spacing > 1 ? rotation_rps : SaturatedThroughput(m, p_eff);
    Slice slice{&m, remaining};
    double want;
    bool saturated = false;
    double placed_rate = 0;
    if (t > 0 && remaining > t) {
      // GpuletRules.one_gpulet_when_smaller; if that gpulet finds no room,
      // the paper's saturated p_eff gpulet.
      double one = 0;
      if (OneGpuletIsSmaller(m, remaining, p_eff, *ctx->grid, &one) &&
          Place(slice, one, /*saturated=*/false, remaining, ctx,
                &placed_rate)) {
        remaining -= placed_rate;
        has_gpulet = true;
        continue;
      }
      slice.rate_rps = t;
      slice.arrival_spacing = spacing;
      want = p_eff;
      saturated = true;
    } else {
      want = MinRequiredPartition(slice, *ctx->grid);
      if (want == 0) return Unschedulable(m, "no partition meets its SLO");
    }
    if (!Place(slice, want, saturated, remaining, ctx, &placed_rate) &&
        !(rules_.leftover_fill() &&
          PlaceInLeftover(m, want, remaining, ctx, &placed_rate))) {
      return Unschedulable(m,
                           absl::StrCat("no room for a ", want, "% gpulet on ",
                                        ctx->layouts->size(), " GPU(s)"));
    }
    remaining -= placed_rate;
    has_gpulet = true;
  }
  return absl::OkStatus();
}

absl::Status GpuletPlacer::Partition(
    const std::vector<const ModelDemand*>& order,
    const std::vector<double>& grid, bool fixed,
    std::vector<GpuLayout>* layouts) const {
  const std::vector<GpuLayout> original = *layouts;
  bool rotated = false;
  const absl::Status status = PartitionRotating(/*rotation=*/true, order, grid,
                                                fixed, layouts, &rotated);
  // Without a gpulet sized for the rotation the pass was the plain one.
  if (!rotated) return status;
  if (status.ok() && RotationHolds(*layouts)) return status;
  if (!status.ok() && !absl::IsResourceExhausted(status)) return status;
  // The rotation's gpulets left no room for another, or one of them was
  // resized (a larger slot, a neighbour) and left fewer equal peers than
  // its spacing counted on: plan each gpulet on its own Poisson stream.
  *layouts = original;
  return PartitionRotating(/*rotation=*/false, order, grid, fixed, layouts,
                           &rotated);
}

bool GpuletPlacer::RotationHolds(const std::vector<GpuLayout>& layouts) {
  std::map<std::pair<const ModelDemand*, double>, int> peers;
  for (const GpuLayout& layout : layouts) {
    for (const auto& slot : layout.slots()) {
      for (const Slice& s : slot.slices) ++peers[{s.demand, s.rate_rps}];
    }
  }
  for (const GpuLayout& layout : layouts) {
    for (const auto& slot : layout.slots()) {
      for (const Slice& s : slot.slices) {
        if (peers[{s.demand, s.rate_rps}] < s.arrival_spacing) return false;
      }
    }
  }
  return true;
}

absl::Status GpuletPlacer::PartitionRotating(
    bool rotation, const std::vector<const ModelDemand*>& order,
    const std::vector<double>& grid, bool fixed,
    std::vector<GpuLayout>* layouts, bool* rotated) const {
  if (rules_.knee_rule() != GPULET_KNEE_RULE_ARTIFACT_THEN_PER_SHARE) {
    return PartitionWith(rules_.knee_rule(), rotation, order, grid, fixed,
                         layouts, rotated);
  }
  const std::vector<GpuLayout> original = *layouts;
  const absl::Status first =
      PartitionWith(GPULET_KNEE_RULE_ARTIFACT, rotation, order, grid, fixed,
                    layouts, rotated);
  if (first.ok() || !absl::IsResourceExhausted(first)) return first;
  *layouts = original;
  if (PartitionWith(GPULET_KNEE_RULE_PER_SHARE, rotation, order, grid, fixed,
                    layouts, rotated)
          .ok()) {
    return absl::OkStatus();
  }
  *layouts = original;
  return first;
}

absl::Status GpuletPlacer::PartitionWith(
    GpuletKneeRule knee, bool rotation,
    const std::vector<const ModelDemand*>& order,
    const std::vector<double>& grid, bool fixed,
    std::vector<GpuLayout>* layouts, bool* rotated) const {
  Context ctx{&grid, fixed, knee, layouts, {}, {}};
  ctx.rotation = rotation;
  ctx.rotated = rotated;
  for (GpuLayout& l : *layouts) {
    l.ApplyChargeRules(rules_);
  }
  for (const ModelDemand* m : order) {
    RETURN_IF_ERROR(PlaceRate(*m, m->rate_rps, &ctx));
  }
  // Shortfalls of residents shrunk beside a newcomer (ARTIFACT), placed
  // like residues; each model is shrunk at most once, so this ends.
  while (!ctx.shortfalls.empty()) {
    auto [m, rate] = *ctx.shortfalls.begin();
    ctx.shortfalls.erase(ctx.shortfalls.begin());
    RETURN_IF_ERROR(PlaceRate(*m, rate, &ctx));
  }
  return absl::OkStatus();
}

}  // namespace tessera
