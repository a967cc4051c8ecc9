#include "scheduler/inss_placement_search.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "scheduler/inss_batching.h"

namespace tessera {
namespace {

// An action, its provisioning and its room.
struct Candidate {
  std::vector<int> gpu, level;
  InssProvisioning provisioning;
  double room = 0;
};

class Searcher {
 public:
  Searcher(const InssCluster& cluster, const std::vector<double>& rates,
           const InssSearchOptions& options)
      : cluster_(cluster), rates_(rates), options_(options) {
    for (double r : rates) active_.push_back(r > 0);
  }

  // The candidate of action (`gpu`, `level`) when its room reaches
  // `at_least` (0: any room); false otherwise.
  bool Evaluate(const std::vector<int>& gpu, std::vector<int> level,
                double at_least, Candidate* out) {
    // A model alone on its device takes all of it: with no co-runner, a
    // larger share only makes it faster.
    std::vector<int> on(cluster_.gpus(), 0);
    for (size_t i = 0; i < gpu.size(); ++i) {
      if (active_[i]) ++on[std::clamp(gpu[i], 0, cluster_.gpus() - 1)];
    }
    for (size_t i = 0; i < gpu.size(); ++i) {
      if (active_[i] && on[std::clamp(gpu[i], 0, cluster_.gpus() - 1)] == 1) {
        level[i] = cluster_.share_units();
      }
    }
    InssProvisioning p =
        InssProvisioning::FromAction(cluster_, gpu, level, active_);
    const double room = InssPlacementSearch::Room(
        cluster_, p, rates_, options_.room_cap, at_least, &evaluations_);
    if (room <= 0 && at_least > 0) return false;
    out->room = room;
    InssPlacementSearch::ActionOf(cluster_, p, &out->gpu, &out->level);
    out->provisioning = std::move(p);
    return true;
  }

  Candidate BestRandom() {
    const int n = static_cast<int>(active_.size());
    std::mt19937_64 rng(options_.seed);
    std::uniform_int_distribution<int> device(0, cluster_.gpus() - 1);
    std::uniform_int_distribution<int> unit(1, cluster_.share_units());
    Candidate best;
    std::vector<int> gpu(n), level(n);
    for (int draw = 0; draw < std::max(1, options_.random_draws); ++draw) {
      for (int i = 0; i < n; ++i) {
        gpu[i] = device(rng);
        level[i] = unit(rng);
      }
      if (draw == 0) {
        Evaluate(gpu, level, 0, &best);
      } else {
        Evaluate(gpu, level, Better(best.room), &best);
      }
    }
    return best;
  }

  // One pass of the neighbourhood around `from`; true when a move beat
  // it by more than min_gain (`from` is then the best move).
  bool Improve(Candidate* from) {
    const int n = static_cast<int>(active_.size());
    Candidate best = *from;
    bool moved = false;
    auto consider = [&](const std::vector<int>& gpu,
                        const std::vector<int>& level) {
      if (Evaluate(gpu, level, Better(best.room), &best)) moved = true;
    };
    for (int i = 0; i < n; ++i) {
      if (!active_[i]) continue;
      std::vector<int> gpu = from->gpu, level = from->level;
      for (int d = 0; d < cluster_.gpus(); ++d) {
        if (d == from->gpu[i]) continue;
        gpu[i] = d;
        consider(gpu, level);
      }
      gpu[i] = from->gpu[i];
      for (int v = 1; v <= cluster_.share_units(); ++v) {
        if (v == from->level[i]) continue;
        level[i] = v;
        consider(gpu, level);
      }
      level[i] = from->level[i];
      for (int j = i + 1; j < n; ++j) {
        if (!active_[j]) continue;
        if (from->gpu[j] == from->gpu[i]) {
          ConsiderSplits(*from, i, j, consider);
        } else {
          std::swap(gpu[i], gpu[j]);
          consider(gpu, level);
          std::swap(gpu[i], gpu[j]);
        }
      }
    }
    if (moved) *from = std::move(best);
    return moved;
  }

  // Every split of units between models `i` and `j` of one device of
  // `from` that keeps the device within its units.
  template <typename Consider>
  void ConsiderSplits(const Candidate& from, int i, int j, Consider& consider) {
    int others = 0;
    for (size_t o = 0; o < active_.size(); ++o) {
      if (static_cast<int>(o) != i && static_cast<int>(o) != j && active_[o] &&
          from.gpu[o] == from.gpu[i]) {
        others += from.level[o];
      }
    }
    const int units = cluster_.share_units() - others;
    std::vector<int> level = from.level;
    for (int li = 1; li < units; ++li) {
      for (int lj = 1; li + lj <= units; ++lj) {
        if (li == from.level[i] && lj == from.level[j]) continue;
        level[i] = li;
        level[j] = lj;
        consider(from.gpu, level);
      }
    }
  }

  // Hands `best`'s idle units out, one at a time, to the model on the
  // device whose extra unit keeps the most room, while the room stays
  // within min_gain of `best`'s: ties in room are broken towards devices
  // given out whole, so that one partition has one action.
  void Fill(Candidate* best) {
    const int n = static_cast<int>(active_.size());
    const double keep = best->room / (1 + options_.min_gain);
    for (int d = 0; d < cluster_.gpus(); ++d) {
      while (true) {
        int used = 0;
        for (int i = 0; i < n; ++i) {
          if (active_[i] && best->gpu[i] == d) used += best->level[i];
        }
        if (used == 0 || used >= cluster_.share_units()) break;
        Candidate next;
        bool found = false;
        for (int i = 0; i < n; ++i) {
          if (!active_[i] || best->gpu[i] != d) continue;
          std::vector<int> level = best->level;
          ++level[i];
          Candidate trial;
          if (Evaluate(best->gpu, level, found ? next.room : keep, &trial) &&
              trial.room >= keep) {
            next = std::move(trial);
            found = true;
          }
        }
        if (!found) break;
        *best = std::move(next);
      }
    }
  }

  int evaluations() const { return evaluations_; }

 private:
  // The room a candidate must reach to beat `room` (any room beats none).
  double Better(double room) const {
    return room <= 0 ? 1 / options_.room_cap : room * (1 + options_.min_gain);
  }

  const InssCluster& cluster_;
  const std::vector<double>& rates_;
  const InssSearchOptions& options_;
  std::vector<bool> active_;
  int evaluations_ = 0;
};

}  // namespace

double InssPlacementSearch::Room(const InssCluster& cluster,
                                 const InssProvisioning& p,
                                 const std::vector<double>& rates_rps,
                                 double cap, double at_least,
                                 int* evaluations) {
  const std::vector<double> backlog(rates_rps.size(), 0);
  auto fits = [&](double scale) {
    ++*evaluations;
    std::vector<double> scaled = rates_rps;
    for (double& r : scaled) r *= scale;
    return InssBatching::Decide(cluster, p, scaled, backlog, {}).ok;
  };
  double lo = at_least > 0 ? at_least : 1 / cap;
  if (lo > cap || !fits(lo)) return 0;
  double hi = cap;
  if (fits(hi)) return hi;
  while (hi / lo > 1.01) {
    const double mid = std::sqrt(lo * hi);
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

void InssPlacementSearch::ActionOf(const InssCluster& cluster,
                                   const InssProvisioning& p,
                                   std::vector<int>* gpu,
                                   std::vector<int>* level) {
  const size_t n = p.gpu.size();
  gpu->assign(n, -1);
  level->assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (p.gpu[i] < 0) continue;
    (*gpu)[i] = p.gpu[i];
    (*level)[i] =
        std::clamp(static_cast<int>(std::lround(p.share_percent[i] /
                                                cluster.share_unit_percent())),
                   1, cluster.share_units());
  }
}

InssPlacementSearch::Result InssPlacementSearch::Search(
    const InssCluster& cluster, const std::vector<double>& rates_rps,
    const InssSearchOptions& options) {
  Searcher searcher(cluster, rates_rps, options);
  Candidate best = searcher.BestRandom();
  for (int pass = 0; pass < options.max_passes && searcher.Improve(&best);
       ++pass) {
  }
  if (best.room > 0) searcher.Fill(&best);
  // The cluster's devices are interchangeable (one kind, one memory size):
  // number them in the order the slots first use them, so that one
  // partition of the models is always the same action.
  std::vector<int> label(cluster.gpus(), -1);
  int next = 0;
  for (int& g : best.gpu) {
    if (g < 0) continue;
    if (label[g] < 0) label[g] = next++;
    g = label[g];
  }
  for (int& g : best.provisioning.gpu) {
    if (g >= 0) g = label[g];
  }
  Result r;
  r.gpu = std::move(best.gpu);
  r.level = std::move(best.level);
  r.provisioning = std::move(best.provisioning);
  r.room = best.room;
  r.evaluations = searcher.evaluations();
  return r;
}

}  // namespace tessera
