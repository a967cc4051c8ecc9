#include "sim/inss_env_fidelity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "scheduler/bda_placement_policy.h"
#include "scheduler/inss_environment.h"
#include "scheduler/inss_plan.h"
#include "sim/inss_v100_setup.h"
#include "sim/simulated_inss_judge.h"

namespace tessera {
namespace {

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  if (n < 2) return 0;
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

// Average ranks (ties share their mean rank).
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = (i + j) / 2.0;
    i = j + 1;
  }
  return rank;
}

}  // namespace

absl::StatusOr<InssEnvFidelity::Result> InssEnvFidelity::Run() const {
  const std::vector<std::string> workloads = V100InssHeldOut();
  std::mt19937_64 rng(options_.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  Result result;
  for (int s = 0; s < options_.samples; ++s) {
    Sample sample;
    sample.workload = workloads[s % workloads.size()];
    sample.slo_factor =
        options_.slo_factors[std::uniform_int_distribution<size_t>(
            0, options_.slo_factors.size() - 1)(rng)];
    sample.load =
        options_.min_load + unit(rng) * (options_.max_load - options_.min_load);
    ASSIGN_OR_RETURN(auto w, InssWorkloadSampler::ParseKey(sample.workload));
    ASSIGN_OR_RETURN(InssCluster cluster, sampler_->Make(w.models, w.gpus));
    InssEnvironmentOptions env_options;
    env_options.steps = 1;
    env_options.presence_probability = 1;
    env_options.slo_factors = {sample.slo_factor};
    env_options.min_rate_fraction = env_options.max_rate_fraction = sample.load;
    InssEnvironment env(cluster, env_options, rng());
    env.Reset();
    const int n = env.slots();
    std::vector<int> action(2 * n);
    std::uniform_int_distribution<int> device(0, w.gpus - 1);
    std::uniform_int_distribution<int> level(0, cluster.share_units() - 1);
    for (int i = 0; i < n; ++i) {
      action[i] = device(rng);
      action[n + i] = level(rng);
    }
    const std::vector<double> rates = env.rates_rps();
    const InssEnvironment::Step step = env.Apply(action);
    sample.env_violation = step.violation_fraction;
    sample.env_reward = step.reward;
    // The same provisioning and batches as a plan, simulated.
    const InssCluster& planned = env.cluster();
    std::vector<WorkloadModel> models;
    std::map<std::string, double> rate_of;
    for (int i = 0; i < n; ++i) {
      if (rates[i] <= 0) continue;
      models.push_back({planned.slots()[i].name, rates[i]});
      rate_of[planned.slots()[i].name] = rates[i];
    }
    const InssProvisioning p =
        InssProvisioning::FromFlatAction(planned, action, rates);
    const InssBatchResult bda =
        InssBatching::Decide(planned, p, rates, std::vector<double>(n, 0), {});
    const Plan plan = InssPlan::Build(planned, p, bda, "inss", "fidelity");
    const ClusterSnapshot snap =
        MakeV100Snapshot(*setup_, w.gpus, models, sample.slo_factor);
    const ClusterSimulator simulator(setup_->truth.get(), Configs(snap));
    const SimResult sim = simulator.Run(plan, rate_of, options_.sim);
    sample.sim_violation = sim.violation_fraction();
    sample.sim_reward = step.capacity_sum;
    for (const ModelResult& m : sim.models) {
      sample.sim_reward -= env_options.penalty * m.violation_fraction();
    }
    result.samples.push_back(sample);
  }
  std::vector<double> ev, sv, er, sr;
  for (const Sample& s : result.samples) {
    ev.push_back(s.env_violation);
    sv.push_back(s.sim_violation);
    er.push_back(s.env_reward);
    sr.push_back(s.sim_reward);
    result.mean_abs_violation_gap +=
        std::abs(s.env_violation - s.sim_violation) / result.samples.size();
  }
  result.violation_pearson = Pearson(ev, sv);
  result.reward_pearson = Pearson(er, sr);
  result.violation_spearman = Pearson(Ranks(ev), Ranks(sv));
  result.reward_spearman = Pearson(Ranks(er), Ranks(sr));
  RETURN_IF_ERROR(RankAgreement(&result));
  return result;
}

absl::Status InssEnvFidelity::RankAgreement(Result* result) const {
  const std::vector<std::string> workloads = V100InssHeldOut();
  const SimulatedInssJudge judge(setup_->truth.get(),
                                 SimulatedInssJudge::StepOptions());
  std::mt19937_64 rng(options_.seed + 1);
  std::uniform_real_distribution<double> unit(0, 1);
  double spearman_sum = 0, ratio_sum = 0;
  int spearman_states = 0;
  for (int s = 0; s < options_.rank_states; ++s) {
    ASSIGN_OR_RETURN(
        auto w, InssWorkloadSampler::ParseKey(workloads[s % workloads.size()]));
    ASSIGN_OR_RETURN(InssCluster cluster, sampler_->Make(w.models, w.gpus));
    InssEnvironmentOptions env_options;
    env_options.steps = 1;
    env_options.presence_probability = 1;
    env_options.judge = &judge;
    env_options.slo_factors = {
        options_.slo_factors[s % options_.slo_factors.size()]};
    env_options.min_rate_fraction = env_options.max_rate_fraction =
        options_.min_load + unit(rng) * (options_.max_load - options_.min_load);
    InssEnvironment env(cluster, env_options, rng());
    const int n = env.slots();
    std::uniform_int_distribution<int> device(0, w.gpus - 1);
    std::uniform_int_distribution<int> level(0, cluster.share_units() - 1);
    std::vector<double> reward, headroom;
    for (int p = 0; p < options_.rank_placements; ++p) {
      env.Reset();  // the same rates: the load range is one point
      std::vector<int> action(2 * n);
      for (int i = 0; i < n; ++i) {
        action[i] = device(rng);
        action[n + i] = level(rng);
      }
      const std::vector<double> rates = env.rates_rps();
      reward.push_back(env.Apply(action).reward);
      headroom.push_back(BdaPlacementPolicy::BdaHeadroom(
          env.cluster(),
          InssProvisioning::FromFlatAction(env.cluster(), action, rates), rates,
          /*cap=*/64));
    }
    const StateRank rank = RankState(reward, headroom);
    if (!rank.counted) continue;
    ratio_sum += rank.argmax_ratio;
    spearman_sum += rank.spearman;
    ++spearman_states;
  }
  result->rank_states = spearman_states;
  if (spearman_states > 0) {
    result->reward_headroom_spearman = spearman_sum / spearman_states;
    result->argmax_headroom_ratio = ratio_sum / spearman_states;
  }
  return absl::OkStatus();
}

InssEnvFidelity::StateRank InssEnvFidelity::RankState(
    const std::vector<double>& reward, const std::vector<double>& headroom) {
  StateRank rank;
  if (reward.empty() || reward.size() != headroom.size()) return rank;
  const double best = *std::max_element(headroom.begin(), headroom.end());
  if (best <= 0) return rank;
  const size_t argmax =
      std::max_element(reward.begin(), reward.end()) - reward.begin();
  rank.counted = true;
  rank.argmax_ratio = headroom[argmax] / best;
  rank.spearman = Pearson(Ranks(reward), Ranks(headroom));
  return rank;
}

void InssEnvFidelity::Print(const Result& result, std::FILE* out) {
  std::fprintf(out,
               "\nInSS's training environment against the simulator: %zu "
               "random placements of the held-out workloads\n",
               result.samples.size());
  std::fprintf(out, "%-12s %10s %10s\n", "", "Pearson", "Spearman");
  std::fprintf(out, "%-12s %10.3f %10.3f\n", "violations",
               result.violation_pearson, result.violation_spearman);
  std::fprintf(out, "%-12s %10.3f %10.3f\n", "reward", result.reward_pearson,
               result.reward_spearman);
  std::fprintf(out, "mean |violation gap| %.1f %% of arrivals\n",
               100 * result.mean_abs_violation_gap);
  std::fprintf(out,
               "Eq. 3 (simulator-judged) against BDA headroom, placements of "
               "one state, %d states: mean Spearman %.3f; Eq. 3's best "
               "placement has %.2f of the best headroom\n",
               result.rank_states, result.reward_headroom_spearman,
               result.argmax_headroom_ratio);
}

std::string InssEnvFidelity::Csv(const Result& result) {
  std::string csv =
      "workload,slo_factor,load,env_violation,sim_violation,env_reward,"
      "sim_reward\n";
  for (const Sample& s : result.samples) {
    absl::StrAppendFormat(&csv, "%s,%.0f,%.3f,%.4f,%.4f,%.3f,%.3f\n",
                          s.workload, s.slo_factor, s.load, s.env_violation,
                          s.sim_violation, s.env_reward, s.sim_reward);
  }
  return csv;
}

}  // namespace tessera
