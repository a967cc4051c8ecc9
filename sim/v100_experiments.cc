#include "sim/v100_experiments.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "scheduler/inss_policy.h"
#include "scheduler/policy_registry.h"
#include "sim/cluster_simulator.h"
#include "sim/inss_v100_setup.h"
#include "sim/throughput_search.h"
#include "sim/workload_suite.h"

namespace tessera {

PolicyOptions V100Experiments::PolicyOptionsFor(const V100Setup& setup) const {
  PolicyOptions o = options_.policy;
  // The name was checked when the options were made.
  o.interference = *V100Interference(setup, options_.interference);
  o.fits = MakeV100Fits(setup, o.rules);
  return o;
}

namespace {

// Per workload, each policy's SLO-preserved max ("efficiency:<policy>":
// its planner efficiency).
using ThroughputRows =
    std::vector<std::pair<std::string, std::map<std::string, double>>>;

void PrintEfficiencyTable(double slo, const std::vector<std::string>& names,
                          const ThroughputRows& rows) {
  std::printf(
      "\nPlanner efficiency at each limit, SLO %.0fx (accepted "
      "load / the most its plan holds; 0: no limit)\n%-26s",
      slo, "workload");
  for (const auto& n : names) std::printf(" %13s", n.c_str());
  std::printf("\n");
  for (const auto& [name, t] : rows) {
    std::printf("%-26s", name.c_str());
    for (const auto& n : names) {
      auto it = t.find("efficiency:" + n);
      if (it == t.end()) {
        std::printf(" %13s", "-");
      } else {
        std::printf(" %13.2f", it->second);
      }
    }
    std::printf("\n");
  }
}

// Each policy's fraction of ideal where ideal ran.
void PrintFractionOfIdeal(double slo, const std::vector<std::string>& names,
                          const ThroughputRows& rows) {
  bool any = false;
  for (const auto& [name, t] : rows) any = any || t.count("ideal");
  if (!any) return;
  std::printf("\nFraction of ideal (%%), SLO %.0fx\n%-26s", slo, "workload");
  for (const auto& n : names) {
    if (n != "ideal") std::printf(" %13s", n.c_str());
  }
  std::printf("\n");
  for (const auto& [name, t] : rows) {
    auto ideal = t.find("ideal");
    if (ideal == t.end() || ideal->second <= 0) continue;
    std::printf("%-26s", name.c_str());
    for (const auto& n : names) {
      if (n == "ideal") continue;
      auto it = t.find(n);
      if (it == t.end()) {
        std::printf(" %13s", "-");
      } else {
        std::printf(" %12.1f%%", 100 * it->second / ideal->second);
      }
    }
    std::printf("\n");
  }
}

void WriteCsvRow(double slo, const std::string& workload,
                 const std::string& policy, const SearchResult& r,
                 double efficiency, std::ofstream* csv) {
  const bool violated = r.limit == SearchResult::Limit::kViolated;
  *csv << slo << ",\"" << workload << "\"," << policy << ","
       << r.max_throughput_rps << ","
       << 100 * r.best.sim.max_model_violation_fraction() << ","
       << r.best.sim.gpus_used << "," << r.best.sim.share_sum << ","
       << r.max_schedulable_scale << ","
       << (violated                                   ? "violated"
           : r.limit == SearchResult::Limit::kRefused ? "refused"
                                                      : "none")
       << "," << efficiency << "\n";
}

}  // namespace

std::map<std::string, double> V100Experiments::ThroughputRow(
    const V100Setup& setup, const Workload& w, double slo,
    const std::vector<std::string>& names, std::ofstream* csv) const {
  SimOptions options;
  options.duration = absl::Seconds(options_.duration_s);
  options.min_requests = options_.min_requests;
  std::vector<WorkloadModel> models;
  for (const auto& m : w.models) models.push_back({m, options_.base_rate_rps});
  const ClusterSnapshot snap =
      MakeV100Snapshot(setup, options_.gpus, models, slo);
  const ClusterSimulator sim(setup.truth.get(), Configs(snap));
  std::printf("%-26s", w.name.c_str());
  std::map<std::string, double> tput;
  for (const auto& n : names) {
    auto policy = PolicyRegistry::Create(n, PolicyOptionsFor(setup));
    if (!policy.ok()) {
      std::printf(" %13s", "error");
      continue;
    }
    if (n == "ideal" &&
        static_cast<int>(w.models.size()) > options_.ideal_max_models) {
      std::printf(" %13s", "-");
      continue;
    }
    const SearchResult r = SearchMaxThroughput(**policy, snap, sim, options);
    if (r.inconclusive) {
      std::printf(" %13s", "(budget)");
      continue;
    }
    tput[n] = r.max_throughput_rps;
    double efficiency = 0;
    if (options_.efficiency) {
      efficiency = PlannerEfficiency(r, snap, sim, options, 0.01);
      tput["efficiency:" + n] = efficiency;
    }
    // "v": the next load was planned and its plan broke 1 % (what a
    // policy must not do); unmarked: the policy refused it.
    const bool violated = r.limit == SearchResult::Limit::kViolated;
    std::printf(" %12.1f%s", r.max_throughput_rps, violated ? "v" : " ");
    if (csv->is_open()) WriteCsvRow(slo, w.name, n, r, efficiency, csv);
  }
  std::printf("\n");
  std::fflush(stdout);
  return tput;
}

void V100Experiments::Throughput(const V100Setup& setup) const {
  const auto policies = absl::StrSplit(options_.policies, ',');
  const std::vector<std::string> names(policies.begin(), policies.end());
  std::ofstream csv;
  if (!options_.csv.empty()) {
    csv.open(options_.csv);
    csv << "slo_factor,workload,policy,max_throughput_rps,violation_pct,"
           "gpus,share_sum,max_schedulable_scale,limit,efficiency\n";
  }
  for (double slo : options_.slo_factors) {
    std::printf(
        "\nSLO-preserved max throughput (req/s, every model <= 1%% "
        "violations in simulation), %d V100s, SLO = %.0fx batch-1 full-GPU "
        "latency, rules %s\n"
        "(v: the next load's plan broke 1 %%; else the policy refused it)\n\n",
        options_.gpus, slo, DescribeRules(options_.policy.rules).c_str());
    std::printf("%-26s", "workload");
    for (const auto& n : names) std::printf(" %13s", n.c_str());
    std::printf("\n");
    ThroughputRows rows;
    for (const Workload& w : V100Workloads()) {
      rows.push_back({w.name, ThroughputRow(setup, w, slo, names, &csv)});
    }
    if (options_.efficiency) PrintEfficiencyTable(slo, names, rows);
    PrintFractionOfIdeal(slo, names, rows);
  }
}

void V100Experiments::GpusNeeded(const V100Setup& setup) const {
  const auto policies = absl::StrSplit(options_.policies, ',');
  std::vector<std::string> names(policies.begin(), policies.end());
  SimOptions options;
  options.duration = absl::Seconds(options_.duration_s);
  for (double slo : options_.slo_factors) {
    std::printf(
        "\nGPUs used / the worst model's simulated violations (%%) for every "
        "model at %.0f "
        "req/s, SLO %.0fx (- = refused on 16 GPUs)\n\n%-26s",
        options_.base_rate_rps, slo, "workload");
    for (const auto& n : names) std::printf(" %15s", n.c_str());
    std::printf("\n");
    for (const Workload& w : V100Workloads()) {
      std::vector<WorkloadModel> models;
      for (const auto& m : w.models) {
        models.push_back({m, options_.base_rate_rps});
      }
      const ClusterSnapshot snap = MakeV100Snapshot(setup, 16, models, slo);
      const ClusterSimulator sim(setup.truth.get(), Configs(snap));
      std::printf("%-26s", w.name.c_str());
      for (const auto& n : names) {
        auto policy = PolicyRegistry::Create(n, PolicyOptionsFor(setup));
        if (!policy.ok() || (n == "ideal" && static_cast<int>(w.models.size()) >
                                                 options_.ideal_max_models)) {
          std::printf(" %15s", "n/a");
          continue;
        }
        // InSS's actor is tied to the device count it was trained for.
        if (n == "inss") {
          auto plan = (*policy)->Schedule(snap);
          if (absl::IsFailedPrecondition(plan.status())) {
            std::printf(" %15s", "refused");
            continue;
          }
        }
        const ScaleOutcome o = EvaluateScale(**policy, snap, sim, options, 1);
        if (!o.schedulable) {
          std::printf(" %15s", "-");
          continue;
        }
        std::printf(" %15s",
                    absl::StrFormat("%d / %.2f", o.plan.devices_size(),
                                    100 * o.sim.max_model_violation_fraction())
                        .c_str());
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

void V100Experiments::Sweep(const V100Setup& setup) const {
  const std::vector<std::string> all = {"alexnet", "resnet50", "vgg19", "ssd"};
  const double r = options_.base_rate_rps;
  // Every policy of --policies but the exhaustive "ideal".
  std::vector<std::string> names;
  for (absl::string_view n : absl::StrSplit(options_.policies, ',')) {
    if (n != "ideal") names.emplace_back(n);
  }
  SimOptions options;
  options.duration = absl::Seconds(10);
  std::printf(
      "\nSchedulability sweep: rates in {0, %.0f, %.0f} req/s per model "
      "(80 scenarios), %d GPUs, SLO 5x\n\n",
      r, 2 * r, options_.gpus);
  std::printf("%-13s %12s %16s %16s\n", "policy", "planned", "held (<=1%)",
              "planned but >1%");
  for (const auto& n : names) {
    auto policy = PolicyRegistry::Create(n, PolicyOptionsFor(setup));
    if (!policy.ok()) {
      std::printf("%-13s %s\n", n.c_str(),
                  std::string(policy.status().message()).c_str());
      continue;
    }
    int planned = 0, held = 0;
    for (int code = 1; code < 81; ++code) {
      std::vector<WorkloadModel> models;
      int c = code;
      for (const auto& m : all) {
        const int level = c % 3;
        c /= 3;
        if (level > 0) models.push_back({m, level * r});
      }
      const ClusterSnapshot snap =
          MakeV100Snapshot(setup, options_.gpus, models, 5);
      const ClusterSimulator sim(setup.truth.get(), Configs(snap));
      const ScaleOutcome o = EvaluateScale(**policy, snap, sim, options, 1.0);
      if (!o.schedulable) continue;
      ++planned;
      if (o.feasible(0.01)) ++held;
    }
    std::printf("%-13s %12d %16d %16d\n", n.c_str(), planned, held,
                planned - held);
  }
}

void V100Experiments::Share100(const std::string& path) const {
  std::printf(
      "\nSensitivity to L(b>1,100%%) (not measured): SLO-preserved max "
      "throughput (req/s) under each extrapolation rule\n\n");
  std::printf("%-34s %-13s %13s %13s %13s\n", "workload", "policy",
              "batch1-ratio", "same-as-80", "omit");
  struct Case {
    std::string name;
    std::vector<std::string> models;
    int gpus;
    double slo;
    std::string policy;
  };
  std::vector<Case> cases = {{"all four, 4 GPUs, SLO 5x",
                              {"alexnet", "resnet50", "vgg19", "ssd"},
                              4,
                              5,
                              "sbp"},
                             {"all four, 4 GPUs, SLO 5x",
                              {"alexnet", "resnet50", "vgg19", "ssd"},
                              4,
                              5,
                              "gpulet"}};
  for (const char* m : {"alexnet", "resnet50", "vgg19", "ssd"}) {
    cases.push_back(
        {std::string(m) + " alone, 1 GPU, SLO 10x", {m}, 1, 10, "sbp"});
  }
  std::vector<std::unique_ptr<V100Setup>> setups;
  for (Share100Rule rule : {Share100Rule::kBatch1Ratio, Share100Rule::kSameAs80,
                            Share100Rule::kOmit}) {
    auto setup = LoadV100Setup(path, rule, 0);
    if (!setup.ok()) return;
    setups.push_back(std::move(*setup));
  }
  SimOptions options;
  options.duration = absl::Seconds(options_.duration_s);
  for (const Case& c : cases) {
    std::printf("%-34s %-13s", c.name.c_str(), c.policy.c_str());
    for (const auto& setup : setups) {
      std::vector<WorkloadModel> models;
      for (const auto& m : c.models) {
        models.push_back({m, options_.base_rate_rps});
      }
      const ClusterSnapshot snap =
          MakeV100Snapshot(*setup, c.gpus, models, c.slo);
      const ClusterSimulator sim(setup->truth.get(), Configs(snap));
      auto policy = PolicyRegistry::Create(c.policy, PolicyOptionsFor(*setup));
      const SearchResult r = SearchMaxThroughput(**policy, snap, sim, options);
      std::printf(" %13.1f", r.max_throughput_rps);
    }
    std::printf("\n");
  }
}

void V100Experiments::Planning(const V100Setup& setup) const {
  std::printf("\nPlanning time per policy (median of 5 runs)\n\n");
  std::printf("%-13s %8s %6s %12s %14s %10s\n", "policy", "models", "GPUs",
              "time (ms)", "result", "GPUs used");
  const auto policies = absl::StrSplit(options_.policies, ',');
  std::vector<std::string> names(policies.begin(), policies.end());
  const std::vector<std::string> base = {"alexnet", "resnet50", "vgg19", "ssd"};
  std::vector<std::pair<int, int>> sizes;
  for (absl::string_view size :
       absl::StrSplit(options_.planning_sizes, ',', absl::SkipEmpty())) {
    std::vector<std::string> mg = absl::StrSplit(size, 'x');
    if (mg.size() == 2) sizes.push_back({std::stoi(mg[0]), std::stoi(mg[1])});
  }
  for (auto [n_models, n_gpus] : sizes) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> slo_dist(3, 10);
    std::vector<WorkloadModel> models;
    ClusterSnapshot snap =
        MakeV100Snapshot(setup, n_gpus, {}, 5);  // devices only
    for (int i = 0; i < n_models; ++i) {
      const std::string b = base[i % base.size()];
      const std::string name = absl::StrCat(b, "/", i);
      ClusterSnapshot one =
          MakeV100Snapshot(setup, 0, {{name, 0}}, slo_dist(rng));
      ModelSnapshot m = one.models[0];
      // Rate: a tenth of what a whole GPU sustains for it at batch 4.
      const LatencyModel* lm = setup.truth->model(b);
      m.rate_rps = 1000.0 / lm->LatencyMs(4, 100) * 4 / 10;
      snap.models.push_back(m);
    }
    for (const std::string& name : names) {
      if (name == "ideal" && n_models > options_.ideal_max_models) {
        continue;
      }
      // Each policy's planning time grows differently; keep the big sizes
      // for the ones that finish them quickly.
      if (n_models > 100 && (name == "las" || name == "igniter")) continue;
      PolicyOptions o = PolicyOptionsFor(setup);
      auto policy = PolicyRegistry::Create(name, o);
      if (name == "inss") {
        // The checkpoint's shape is fixed; time an actor of this shape.
        if (!options_.untrained_inss_actor) continue;
        auto actor =
            options_.untrained_inss_actor(V100InssInfo(base, n_models, n_gpus));
        if (!actor.ok()) continue;
        policy = std::unique_ptr<SchedulingPolicy>(
            new InssPolicy("inss", o, *actor, nullptr));
      }
      if (!policy.ok()) continue;
      std::vector<double> times;
      absl::StatusOr<Plan> plan;
      for (int rep = 0; rep < 5; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        plan = (*policy)->Schedule(snap);
        times.push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count());
        if (n_models >= 1000) break;  // one run is enough to see the scale
      }
      std::sort(times.begin(), times.end());
      std::printf("%-13s %8d %6d %12.2f %14s %10d\n", name.c_str(), n_models,
                  n_gpus, times[times.size() / 2],
                  plan.ok() ? "planned" : "unschedulable",
                  plan.ok() ? plan->devices_size() : 0);
      if (!plan.ok()) {
        std::printf("         (%s)\n",
                    std::string(plan.status().message()).c_str());
      }
      std::fflush(stdout);
    }
  }
}

}  // namespace tessera
