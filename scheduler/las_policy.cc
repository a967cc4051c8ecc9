#include "scheduler/las_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "batching/weighted_round_robin.h"
#include "common/status_macros.h"
#include "perfmodel/interference_model.h"
#include "scheduler/gpu_layout.h"
#include "scheduler/policy_registry.h"
#include "scheduler/time_share_solver.h"

namespace tessera {
namespace {

constexpr int kMaxRounds = 20;

struct Config {
  int batch = 0;  // 0: none
  double share = 0;
  double latency_ms = 0;  // T_i: queue + interfered processing
  double efficiency = 0;  // b / (p T)
};

// One service replica: a model's rate share and its configuration.
struct Service {
  int demand = 0;
  double rate_rps = 0;
  Config config;
  int gpu = -1;
  // Every request the router deals this replica is at least this many of
  // the model's arrivals after the last (MinRoundRobinSpacings over its
  // equal replicas; 1 without SharedRules.round_robin_arrivals).
  int spacing = 1;
};

class Planner {
 public:
  Planner(const std::vector<ModelDemand>& demands,
          const std::vector<LasCoefficients>& coefficients,
          const std::vector<double>& shares,
          const std::vector<const DeviceSnapshot*>& gpus,
          const InterferenceModel* interference, const LasRules& rules,
          int max_partitions_per_gpu)
      : rules_(rules),
        max_partitions_(max_partitions_per_gpu),
        demands_(demands),
        coefficients_(coefficients),
        shares_(shares),
        gpus_(gpus),
        interference_(interference) {
    // Shares below the smallest one profiled over every batch size are not
    // trusted (the V100 data has 10 % at batch 1 only).
    for (const ModelDemand& m : demands_) {
      const LatencyModel& lm = *m.latency;
      double min_share = lm.shares().back();
      for (size_t i = lm.shares().size(); i-- > 0;) {
        if (lm.ProfiledUpTo(i) < std::min(m.max_batch, lm.max_batch())) break;
        min_share = lm.shares()[i];
      }
      min_share_.push_back(min_share);
    }
  }

  // T (the tail T with LasRules.tail_wait, unless tail_wait_slo_only), or
  // +inf when (13)/(14) or the collection-time check fail. A configuration
  // only the batch queue could admit is not checked (+inf) when its
  // throughput per share b / (p T) would be at most `min_efficiency`: the
  // configuration search asks only for ones that beat its best.
  double Latency(const Service& s, int b, double p, double overhead,
                 double min_efficiency = 0) const {
    const ModelDemand& m = demands_[s.demand];
    if (p < min_share_[s.demand]) {
      return std::numeric_limits<double>::infinity();
    }
    const double solo = LasModel::ProcMs(coefficients_[s.demand], b, p);
    const double proc = solo * (1 + overhead);
    const double collect =
        rules_.collection_time() ? (b - 1) * 1000.0 / s.rate_rps : 0;
    // The queue only adds to proc: a batch that fails without it fails
    // (and needs no queueing model).
    if (proc + collect > m.slo_ms || 1000.0 * b / proc < s.rate_rps) {
      return std::numeric_limits<double>::infinity();
    }
    // Eq. 6 (the M/D/1 mean) on t_proc; LasRules.interfered_queue: on the
    // interfered time.
    const double served = rules_.interfered_queue() ? proc : solo;
    double queue = LasModel::QueueMs(s.rate_rps, b, served);
    // LasRules.tail_wait: the planning-tail wait of whole batches
    // (FixedBatchWaitMs; the batch is also the dispatcher's cap) instead of
    // the mean: the SLO is a tail target, the paper's T a mean (the
    // digest's "mean vs tail").
    // LasRules.tail_wait_slo_only: the tail only in the SLO check; the
    // paper's T (the mean) stays in (14) and in the objective b / (p T).
    const double mean_t = queue + proc;
    double t = mean_t;
    if (rules_.tail_wait() && std::isfinite(queue)) {
      t = proc + FixedBatchWaitMs(s.rate_rps * served / (1000.0 * b), served, b,
                                  m.queueing_tail, m.burst_tail,
                                  m.bulk_queue_wait, s.spacing);
      // SharedRules.lone_batch_queue: the batch queue with each batch of k
      // at its own interfered time; the tail sojourn then fits the SLO.
      // (At b = 1 it is the M/D/1 queue the wait above already is; with
      // lone_queue_expiry the dispatcher's queue would admit more, but
      // b / T >= lambda at T = SLO below leaves b = 1 no rate above
      // 1000 / SLO, which the wait above already admits.)
      if (t > m.slo_ms && m.lone_batch_queue && collect == 0 && b > 1 &&
          b / (p / 100 * (rules_.tail_wait_slo_only() ? mean_t : m.slo_ms)) >
              min_efficiency &&
          LoneQueueFits(s, b, p, overhead)) {
        t = m.slo_ms;
      }
    }
    if (t + collect > m.slo_ms) return std::numeric_limits<double>::infinity();
    if (rules_.tail_wait_slo_only()) t = mean_t;
    if (1000.0 * b / t < s.rate_rps) {
      return std::numeric_limits<double>::infinity();
    }
    return t;
  }

  // Whether `s` at (b, p) beside co-runners adding `overhead` keeps the
  // share of its requests later than the SLO within the planning tail, its
  // dispatcher starting min(queue, b) and a batch of k taking t_proc(k)
  // (1 + I(X)) (LoneQueueLateFraction), its requests at least s.spacing
  // of the model's arrivals apart (Erlang gaps). Memoised per plan: the
  // configuration search asks for the same service at the same (b, p) on
  // every GPU with the same co-runners.
  bool LoneQueueFits(const Service& s, int b, double p, double overhead) const {
    const auto key =
        std::make_tuple(s.demand, b, p, overhead, s.rate_rps, s.spacing);
    if (auto it = lone_fits_.find(key); it != lone_fits_.end()) {
      return it->second;
    }
    const ModelDemand& m = demands_[s.demand];
    std::vector<double> batch_ms(b);
    for (int k = 1; k <= b; ++k) {
      batch_ms[k - 1] =
          LasModel::ProcMs(coefficients_[s.demand], k, p) * (1 + overhead);
    }
    const bool fits = LoneQueueLateFraction(m.lone_queue_expiry, s.rate_rps,
                                            batch_ms, m.slo_ms, s.spacing,
                                            m.queueing_tail) <= m.queueing_tail;
    lone_fits_.emplace(key, fits);
    return fits;
  }

  // I(X): the co-runners' summed overhead on `s` at (b, p).
  double Overhead(const Service& s, int b, double p, int gpu,
                  const std::vector<Service>& all, int self) const {
    if (!interference_) return 0;
    double sum = 0;
    const Placement me{demands_[s.demand].latency, b, p};
    for (size_t j = 0; j < all.size(); ++j) {
      if (static_cast<int>(j) == self || all[j].gpu != gpu) continue;
      sum += interference_->Factor(
                 me, {demands_[all[j].demand].latency, all[j].config.batch,
                      all[j].config.share}) -
             1;
    }
    return sum;
  }

  // The best configuration of `self` on `gpu` within `room` percent: the
  // most throughput per share, or with `smallest`, the smallest share that
  // has a feasible batch (the most efficient batch at it).
  Config Best(const Service& s, int gpu, const std::vector<Service>& all,
              int self, double room, bool smallest = false) const {
    Config best;
    const ModelDemand& m = demands_[s.demand];
    for (double p : shares_) {
      if (p > room + 1e-9) break;
      for (int b = 1; b <= m.max_batch; ++b) {
        const double over = gpu < 0 ? 0 : Overhead(s, b, p, gpu, all, self);
        // T >= t_proc: a configuration whose b / (p t_proc) cannot beat
        // the best needs no queueing check.
        if (best.batch > 0 &&
            b / (p / 100 * LasModel::ProcMs(coefficients_[s.demand], b, p) *
                 (1 + over)) <=
                best.efficiency) {
          continue;
        }
        const double t = Latency(s, b, p, over, best.efficiency);
        if (!std::isfinite(t)) continue;
        const double e = b / (p / 100 * t);
        if (e > best.efficiency) best = {b, p, t, e};
      }
      if (smallest && best.batch > 0) break;
    }
    return best;
  }

  int Count(const std::vector<Service>& all, int gpu, int except) const {
    int n = 0;
    for (size_t j = 0; j < all.size(); ++j) {
      n += all[j].gpu == gpu && static_cast<int>(j) != except ? 1 : 0;
    }
    return n;
  }

  double Used(const std::vector<Service>& all, int gpu, int except) const {
    double u = 0;
    for (size_t j = 0; j < all.size(); ++j) {
      if (all[j].gpu == gpu && static_cast<int>(j) != except) {
        u += all[j].config.share;
      }
    }
    return u;
  }

  bool MemoryFits(const std::vector<Service>& all, int gpu, int self) const {
    const int64_t cap = gpus_[gpu]->memory_bytes;
    if (cap <= 0) return true;
    int64_t used = demands_[all[self].demand].latency->memory_bytes();
    for (size_t j = 0; j < all.size(); ++j) {
      if (all[j].gpu == gpu && static_cast<int>(j) != self) {
        used += demands_[all[j].demand].latency->memory_bytes();
      }
    }
    return used <= cap;
  }

  // Puts services[i] on the first GPU (up to `open`) with room for a
  // feasible configuration (see Best for `smallest`); may open the next
  // GPU. False if none.
  bool Place(std::vector<Service>& all, int i, int* open,
             bool smallest = false) const {
    for (int g = 0; g < static_cast<int>(gpus_.size()); ++g) {
      if (g > *open) break;  // GPUs open in order
      if (max_partitions_ > 0 && Count(all, g, i) >= max_partitions_) continue;
      const int old = all[i].gpu;
      all[i].gpu = g;
      if (MemoryFits(all, g, i)) {
        const Config c =
            Best(all[i], g, all, i, 100 - Used(all, g, i), smallest);
        if (c.batch > 0) {
          all[i].config = c;
          if (g == *open) ++*open;
          return true;
        }
      }
      all[i].gpu = old;
    }
    return false;
  }

  // First fit in the current order, each service at its best
  // configuration (or its smallest: `smallest`); the index of the first
  // service that found no room, or -1.
  int FirstFit(std::vector<Service>& all, bool smallest, int* open) const {
    *open = 0;
    for (Service& s : all) s.gpu = -1;
    for (size_t i = 0; i < all.size(); ++i) {
      if (!Place(all, static_cast<int>(i), open, smallest)) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  absl::StatusOr<std::vector<Service>> Run(std::vector<Service> all) const {
    std::stable_sort(all.begin(), all.end(),
                     [](const Service& a, const Service& b) {
                       return a.config.share > b.config.share;
                     });
    int open = 0;
    // Tessera's addition: first fit with every service at its most
    // efficient (b, p) is not monotone in the load (a lighter load can
    // pick shares that pack worse). When it finds no room, place every
    // service at its smallest feasible share instead; the rounds below
    // then grow configurations where room is left.
    if (const int failed = FirstFit(all, false, &open); failed >= 0) {
      if (const int again = FirstFit(all, true, &open); again >= 0) {
        return Unschedulable(demands_[all[again].demand],
                             absl::StrCat("no room for it on the cluster's ",
                                          gpus_.size(), " GPUs"));
      }
    }
    // The paper's loop runs "until convergence or max iterations". Best
    // responses can cycle (each service's best (b, p) changes its
    // neighbours' interference, and theirs its own), and a round-end state
    // whose later services grew can leave an earlier one infeasible. So
    // every feasible round-end state is kept, and a repeated state (a
    // cycle) or the last round returns the latest of them.
    std::vector<std::vector<Service>> seen;
    std::optional<std::vector<Service>> feasible;
    for (int round = 0; round < kMaxRounds; ++round) {
      bool changed = false;
      for (size_t i = 0; i < all.size(); ++i) {
        const int self = static_cast<int>(i);
        const Config c = Best(all[i], all[i].gpu, all, self,
                              100 - Used(all, all[i].gpu, self));
        if (c.batch == 0) {
          const int from = all[i].gpu;
          all[i].gpu = -1;
          if (!Place(all, self, &open)) {
            return Unschedulable(
                demands_[all[i].demand],
                absl::StrCat("interference leaves it no feasible (b, p) on "
                             "any of the ",
                             gpus_.size(), " GPUs"));
          }
          changed = changed || all[i].gpu != from;
          continue;
        }
        if (c.batch != all[i].config.batch || c.share != all[i].config.share) {
          all[i].config = c;
          changed = true;
        }
      }
      if (!changed) return all;
      const int infeasible = FirstInfeasible(all);
      if (infeasible < 0) feasible = all;
      const bool cycle = std::any_of(
          seen.begin(), seen.end(),
          [&](const std::vector<Service>& s) { return Same(s, all); });
      if (cycle) break;
      seen.push_back(all);
    }
    if (feasible.has_value()) return *std::move(feasible);
    const int infeasible = FirstInfeasible(all);
    return Unschedulable(demands_[all[std::max(0, infeasible)].demand],
                         "the configuration search did not settle");
  }

  // The first service whose configuration breaks (13)-(14) beside its
  // current co-runners, or whose GPU is over-committed; -1 if none.
  int FirstInfeasible(const std::vector<Service>& all) const {
    for (size_t i = 0; i < all.size(); ++i) {
      const Service& s = all[i];
      const double over = Overhead(s, s.config.batch, s.config.share, s.gpu,
                                   all, static_cast<int>(i));
      if (!std::isfinite(Latency(s, s.config.batch, s.config.share, over)) ||
          Used(all, s.gpu, -1) > 100 + 1e-9) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }

  // Whether two states place and configure every service alike.
  static bool Same(const std::vector<Service>& a,
                   const std::vector<Service>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].gpu != b[i].gpu || a[i].config.batch != b[i].config.batch ||
          a[i].config.share != b[i].config.share) {
        return false;
      }
    }
    return true;
  }

 private:
  const LasRules rules_;
  const int max_partitions_;  // 0: no limit
  const std::vector<ModelDemand>& demands_;
  const std::vector<LasCoefficients>& coefficients_;
  const std::vector<double>& shares_;
  const std::vector<const DeviceSnapshot*>& gpus_;
  const InterferenceModel* interference_;
  std::vector<double> min_share_;  // per demand
  mutable absl::flat_hash_map<std::tuple<int, int, double, double, double, int>,
                              bool>
      lone_fits_;  // LoneQueueFits by (demand, b, p, overhead, rate, spacing)
};

}  // namespace

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> LasPolicy::Create(
    const PolicyOptions& options) {
  // PolicyInputs plan with SharedRules' margins: use LAS's.
  PolicyOptions o = options;
  o.rules = WithFamilyMargins(o.rules, o.rules.las().latency_headroom(),
                              o.rules.las().rate_headroom(),
                              o.rules.las().queueing_tail());
  return std::unique_ptr<SchedulingPolicy>(new LasPolicy(std::move(o)));
}

absl::StatusOr<LasCoefficients> LasPolicy::FitModel(const LatencyModel& lm,
                                                    double latency_scale,
                                                    int max_batch) {
  std::vector<LasSample> samples;
  for (size_t i = 0; i < lm.shares().size(); ++i) {
    const double p = lm.shares()[i];
    for (int b = 1; b <= std::min(max_batch, lm.ProfiledUpTo(i)); ++b) {
      samples.push_back({b, p, lm.LatencyMs(b, p) * latency_scale});
    }
  }
  auto c = FitLasModel(samples);
  if (!c.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", lm.model(), "': ", c.status().message()));
  }
  return c;
}

absl::StatusOr<Plan> LasPolicy::PlanFrom(const PolicyInputs& inputs) const {
  const auto& demands = inputs.demands();
  const auto& gpus = inputs.gpus();
  bool grid_declared = true;
  for (const DeviceSnapshot* d : gpus) {
    grid_declared = grid_declared && !d->allowed_shares.empty();
  }
  std::vector<double> shares;
  if (grid_declared) {
    shares = inputs.share_grid();
  } else {
    for (int p = 10; p <= 100; p += 10) shares.push_back(p);
  }
  std::vector<LasCoefficients> coefficients;
  for (const ModelDemand& m : demands) {
    if (const LasCoefficients* fit = inputs.LasFitOf(m)) {
      coefficients.push_back(*fit);
      continue;
    }
    ASSIGN_OR_RETURN(auto c,
                     FitModel(*m.latency, m.latency_scale, m.max_batch));
    coefficients.push_back(c);
  }
  const Planner planner(demands, coefficients, shares, gpus,
                        options_.interference.get(), options_.rules.las(),
                        options_.rules.max_partitions_per_gpu());
  std::vector<Service> services;
  for (size_t i = 0; i < demands.size(); ++i) {
    if (demands[i].rate_rps <= 0) continue;
    // The fewest equal replicas one of which is feasible alone.
    // Without LasRules.replicas (the paper) one service per model.
    bool done = false;
    const int max_replicas = options_.rules.las().replicas()
                                 ? 64 * static_cast<int>(gpus.size())
                                 : 1;
    for (int k = 1; k <= max_replicas && !done; ++k) {
      Service s{static_cast<int>(i), demands[i].rate_rps / k, {}, -1};
      if (demands[i].round_robin_arrivals && k >= 2) {
        const std::vector<int> spacing =
            MinRoundRobinSpacings(std::vector<double>(k, s.rate_rps));
        s.spacing = *std::min_element(spacing.begin(), spacing.end());
      }
      s.config = planner.Best(s, -1, {}, -1, 100);
      if (s.config.batch > 0) {
        for (int r = 0; r < k; ++r) services.push_back(s);
        done = true;
      }
    }
    if (!done) {
      return Unschedulable(demands[i],
                           "no (b, p) meets its SLO even on a whole GPU");
    }
  }
  ASSIGN_OR_RETURN(auto placed, planner.Run(std::move(services)));
  Plan plan;
  plan.set_policy("las");
  plan.set_reason("latency-aware (b, p) per service, max throughput/share");
  std::vector<DevicePlan*> devices(gpus.size(), nullptr);
  std::vector<int> counts(gpus.size(), 0);
  for (const Service& s : placed) {
    if (!devices[s.gpu]) {
      devices[s.gpu] = plan.add_devices();
      devices[s.gpu]->set_backend_id(gpus[s.gpu]->backend_id);
      devices[s.gpu]->set_device_id(gpus[s.gpu]->device_id);
    }
    GpuletPlan* g = devices[s.gpu]->add_gpulets();
    g->set_gpulet_id(absl::StrCat(gpus[s.gpu]->backend_id, "/",
                                  gpus[s.gpu]->device_id, "/g",
                                  counts[s.gpu]++));
    g->set_share_percent(s.config.share);
    ModelAssignment* a = g->add_models();
    a->set_model(demands[s.demand].name);
    a->set_batch_size(s.config.batch);
    a->set_duty_cycle_ms(0);
    a->set_rate_rps(s.rate_rps);
  }
  return plan;
}

REGISTER_SCHEDULING_POLICY("las", LasPolicy::Create);

}  // namespace tessera
