#include "scheduler/inss_environment.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "absl/base/internal/raw_logging.h"
#include "perfmodel/inss_model.h"
#include "scheduler/bda_placement_policy.h"
#include "scheduler/time_share_solver.h"

namespace tessera {

InssEnvironment::InssEnvironment(InssCluster cluster,
                                 InssEnvironmentOptions options, uint64_t seed)
    : cluster_(std::move(cluster)), options_(std::move(options)), rng_(seed) {
  bool any = false;
  for (const InssModelSlot& s : cluster_.slots()) {
    any = any || s.latency != nullptr;
  }
  ABSL_RAW_CHECK(any, "an InSS environment needs a model");
}

InssEnvironment::InssEnvironment(const InssWorkloadSampler* sampler,
                                 InssEnvironmentOptions options, uint64_t seed)
    : sampler_(sampler), options_(std::move(options)), rng_(seed) {
  cluster_ = sampler_->Sample(rng_);
}

std::vector<float> InssEnvironment::EncodeState(
    const InssCluster& cluster, const std::vector<double>& rates_rps,
    const std::vector<double>& backlog, const InssProvisioning& current) {
  const int n = static_cast<int>(cluster.slots().size());
  const int k = cluster.gpus();
  const int max_gpus = cluster.max_gpus();
  const double memory = static_cast<double>(cluster.gpu_memory_bytes());
  std::vector<float> s;
  s.reserve(StateSize(cluster));
  std::vector<int64_t> used(k, 0);
  for (int i = 0; i < n; ++i) {
    const InssModelSlot& slot = cluster.slots()[i];
    const bool present = rates_rps[i] > 0 && slot.latency != nullptr;
    const bool placed = present && !current.gpu.empty() && current.gpu[i] >= 0;
    s.push_back(present ? 1.f : 0.f);
    s.push_back(present ? rates_rps[i] / slot.reference_rps : 0.f);
    s.push_back(present ? backlog[i] / slot.reference_rps : 0.f);
    s.push_back(present ? slot.slo_ms / (10 * slot.base_latency_ms) : 0.f);
    s.push_back(placed ? current.share_percent[i] / 100 : 0.f);
    s.push_back(placed ? (current.gpu[i] + 1.f) / max_gpus : 0.f);
    s.push_back(present ? std::log10(slot.base_latency_ms) / 2 : 0.f);
    s.push_back(present ? slot.batch8_ratio : 0.f);
    s.push_back(present ? slot.half_share_ratio / 2 : 0.f);
    s.push_back(present && memory > 0 ? slot.memory_bytes / memory : 0.f);
    if (placed) used[current.gpu[i]] += slot.memory_bytes;
  }
  for (int g = 0; g < max_gpus; ++g) {
    s.push_back(g < k ? 1.f : 0.f);
    s.push_back(g < k && memory > 0 ? used[g] / memory : 0.f);
  }
  return s;
}

double InssEnvironment::SoloCapacityRps(const InssCluster& cluster, int slot) {
  const int n = static_cast<int>(cluster.slots().size());
  InssProvisioning alone;
  alone.gpu.assign(n, -1);
  alone.share_percent.assign(n, 0);
  alone.gpu[slot] = 0;
  alone.share_percent[slot] = 100;
  const std::vector<double> backlog(n, 0);
  auto ok = [&](double rate) {
    std::vector<double> rates(n, 0);
    rates[slot] = rate;
    return InssBatching::Decide(cluster, alone, rates, backlog, {}).ok;
  };
  double lo = 0, hi = cluster.slots()[slot].reference_rps;
  while (ok(hi) && hi < 1e7) {
    lo = hi;
    hi *= 2;
  }
  for (int it = 0; it < 30; ++it) {
    const double mid = (lo + hi) / 2;
    (ok(mid) ? lo : hi) = mid;
  }
  return lo;
}

std::string InssEnvironment::RngState() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

absl::Status InssEnvironment::SetRngState(const std::string& state) {
  std::istringstream in(state);
  std::mt19937_64 rng;
  in >> rng;
  if (in.fail()) {
    return absl::InvalidArgumentError(
        "the InSS environment's random state does not parse");
  }
  rng_ = rng;
  return absl::OkStatus();
}

std::vector<float> InssEnvironment::Reset() {
  const int n = slots();
  t_ = 0;
  std::uniform_real_distribution<double> unit(0, 1);
  // No SLO factors: the models' configured SLOs.
  const double factor =
      options_.slo_factors.empty()
          ? 0
          : options_.slo_factors[std::uniform_int_distribution<size_t>(
                0, options_.slo_factors.size() - 1)(rng_)];
  if (sampler_ != nullptr) cluster_ = sampler_->Sample(rng_);
  std::vector<int> modelled;
  for (int i = 0; i < n; ++i) {
    if (cluster_.slots()[i].latency != nullptr) modelled.push_back(i);
  }
  std::vector<bool> present(n, false);
  bool any = false;
  for (int i : modelled) {
    present[i] =
        sampler_ != nullptr || unit(rng_) < options_.presence_probability;
    any = any || present[i];
  }
  if (!any) {
    present[modelled[std::uniform_int_distribution<size_t>(
        0, modelled.size() - 1)(rng_)]] = true;
  }
  rates_.assign(n, 0);
  lo_.assign(n, 0);
  hi_.assign(n, 0);
  step_.assign(n, 0);
  backlog_.assign(n, 0);
  direction_.assign(n, 1);
  int n_present = 0;
  for (int i = 0; i < n; ++i) n_present += present[i] ? 1 : 0;
  // More models than devices share them: scale the range down so the
  // cluster is not overloaded on average.
  const double crowding =
      std::min(1.0, static_cast<double>(cluster_.gpus()) / n_present);
  for (int i = 0; i < n; ++i) {
    InssModelSlot& s = cluster_.mutable_slots()[i];
    if (factor > 0) s.slo_ms = factor * s.base_latency_ms;
    if (!present[i]) continue;
    const double cap = SoloCapacityRps(cluster_, i);
    lo_[i] = options_.min_rate_fraction * crowding * cap;
    hi_[i] = options_.max_rate_fraction * crowding * cap;
    step_[i] = options_.rate_step_fraction * (hi_[i] - lo_[i]);
    rates_[i] = lo_[i] + unit(rng_) * (hi_[i] - lo_[i]);
    direction_[i] = unit(rng_) < 0.5 ? -1 : 1;
  }
  current_ = InssProvisioning{};
  current_.gpu.assign(n, -1);
  current_.share_percent.assign(n, 0);
  return EncodeState(cluster_, rates_, backlog_, current_);
}

double InssEnvironment::ModelViolations(int i, const InssBatchResult& bda,
                                        double queued) {
  const InssModelSlot& s = cluster_.slots()[i];
  const double backlog_before = backlog_[i];
  const double cap = bda.capacity_rps[i];
  const double served = std::min(queued, cap);
  const double keep = std::max(0.0, cap * s.slo_ms / 1000.0);
  const double left = queued - served;
  const double dropped = std::max(0.0, left - keep);
  backlog_[i] = left - dropped;
  double late = 0;
  const int b = bda.batch[i];
  if (b > 0 && bda.worst_ms[i] > s.slo_ms) {
    // Eq. 2 with evenly spaced arrivals: position j of a batch waits
    // j / lambda less than the first.
    const double exec = bda.exec_ms[i];
    const double det =
        InssModel::WorstTaskMs(b, rates_[i], exec, backlog_before);
    int late_positions = 0;
    for (int j = 0; j < b; ++j) {
      if (det - 1000.0 * j / rates_[i] > s.slo_ms) ++late_positions;
    }
    double fraction = static_cast<double>(late_positions) / b;
    // Under Poisson arrivals (queueing_check) batches also queue: the
    // share of the rest whose M/D/1 wait exceeds the slack left.
    if (s.queueing_check) {
      const double rho = rates_[i] * exec / (1000.0 * b);
      fraction +=
          (1 - fraction) * RoundWaitTailProbability(rho, exec, s.slo_ms - det);
    }
    late = served * fraction;
  }
  return dropped + late;
}

InssEnvironment::Step InssEnvironment::Apply(const std::vector<int>& action) {
  const int n = slots();
  current_ = InssProvisioning::FromFlatAction(cluster_, action, rates_);
  const InssBatchResult bda =
      InssBatching::Decide(cluster_, current_, rates_, backlog_, {});
  std::vector<int64_t> used(cluster_.gpus(), 0);
  for (int i = 0; i < n; ++i) {
    if (rates_[i] <= 0) continue;  // not placed
    used[current_.gpu[i]] += cluster_.slots()[i].memory_bytes;
  }
  std::vector<double> judged;
  if (options_.judge != nullptr) {
    judged = options_.judge->ViolationFractions(cluster_, current_, bda, rates_,
                                                rng_());
  }
  Step out;
  double tasks = 0, violating = 0;
  for (int i = 0; i < n; ++i) {
    if (rates_[i] <= 0) continue;  // not placed
    const InssModelSlot& s = cluster_.slots()[i];
    const double arrivals = rates_[i];  // one-second step
    const double backlog_before = backlog_[i];
    const double queued = backlog_before + arrivals;
    tasks += queued;
    double bad = 0;
    const bool memory_ok = cluster_.gpu_memory_bytes() == 0 ||
                           used[current_.gpu[i]] <= cluster_.gpu_memory_bytes();
    if (!memory_ok) {
      bad = queued;
      backlog_[i] = 0;
    } else {
      out.capacity_sum += bda.capacity_rps[i] / s.reference_rps;
      if (!judged.empty()) {
        bad = queued * judged[i];
        backlog_[i] = 0;
      } else {
        bad = ModelViolations(i, bda, queued);
      }
    }
    violating += bad;
    const double v = queued > 0 ? bad / queued : 0;
    out.reward -= options_.penalty * v;
  }
  out.reward += out.capacity_sum;
  if (options_.headroom_weight > 0) {
    out.headroom = BdaPlacementPolicy::BdaHeadroom(cluster_, current_, rates_,
                                                   options_.headroom_cap);
    out.reward +=
        options_.headroom_weight * std::log2(std::max(0.5, out.headroom));
  }
  out.violation_fraction = tasks > 0 ? violating / tasks : 0;
  // Rates move every rate_change_steps steps, bouncing off the bounds.
  ++t_;
  if (t_ % options_.rate_change_steps == 0) {
    for (int i = 0; i < n; ++i) {
      if (rates_[i] <= 0) continue;
      double next = rates_[i] + direction_[i] * step_[i];
      if (next > hi_[i] || next < lo_[i]) {
        direction_[i] = -direction_[i];
        next = rates_[i] + direction_[i] * step_[i];
      }
      rates_[i] = std::clamp(next, lo_[i], hi_[i]);
    }
  }
  out.done = t_ >= options_.steps;
  out.state = EncodeState(cluster_, rates_, backlog_, current_);
  return out;
}

}  // namespace tessera
