// tessera_experiments: the scheduling experiments on the V100
// measurements, printed as tables (and written as CSV for plotting).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/usage.h"
#include "learner/torch_inss_actor.h"
#include "scheduler/inss_policy.h"
#include "scheduler/policy_registry.h"
#include "sim/abacus_reproduction.h"
#include "sim/emulated_workload.h"
#include "sim/gpulet_reproduction.h"
#include "sim/igniter_reproduction.h"
#include "sim/inss_env_fidelity.h"
#include "sim/inss_reproduction.h"
#include "sim/inss_v100_setup.h"
#include "sim/las_reproduction.h"
#include "sim/rules_report.h"
#include "sim/rules_study.h"
#include "sim/throughput_search.h"
#include "sim/v100_workload.h"
#include "sim/workload_suite.h"

ABSL_FLAG(std::string, v100_profile,
          "../shared/data/igniter-v100/profile.jsonl",
          "iGniter's public V100 measurements (profile.jsonl).");
ABSL_FLAG(std::string, experiments, "throughput,gpus,sweep,share100,planning",
          "Which experiments to run: throughput (SLO-preserved max "
          "throughput per policy), gpus (GPUs used for a fixed workload), "
          "sweep, share100, planning, checks (gpulet's interference checks "
          "beside gpulet-noint, sbp and ideal-layout), additions (each of "
          "Tessera's additions switched off, over the rules suite), "
          "suite (--policies under the rules of the flags over "
          "--suite_half), calibrate (each policy family's margins on the "
          "suite's calibration half, "
          "checked on the held-out half), reproduce (the papers' headline "
          "experiments of --reproduce, with a verdict per claim, under the "
          "paper and the tessera rules), inss-fidelity (InSS's training "
          "environment against the simulator on 200 random placements of "
          "the held-out workloads; --csv writes the samples).");
ABSL_FLAG(std::string, slo_factors, "3,5,10", "SLO factors (x L(1,100%)).");
ABSL_FLAG(std::string, policies,
          "sbp,greedy,gpulet-noint,gpulet,igniter,inss,las,ideal-layout,ideal",
          "Policies to compare.");
ABSL_FLAG(double, base_rate, 100, "Base rate per model (req/s).");
ABSL_FLAG(int, gpus, 4, "GPUs for the throughput experiments.");
ABSL_FLAG(double, duration_s, 20, "Simulated seconds per run.");
ABSL_FLAG(bool, standby_shadows, false,
          "Policies that support it (igniter) plan warm standby shares, and "
          "the simulator switches a gpulet to its standby when its calls "
          "miss the SLO (as the frontend does).");
ABSL_FLAG(double, min_requests, 1000,
          "Simulate light loads long enough that every model sees this many "
          "requests (MEASURES.md: one violation < 0.1 %; 0: --duration_s "
          "always).");
ABSL_FLAG(std::string, csv, "", "Write the throughput table here as CSV.");
ABSL_FLAG(std::string, inss_checkpoint, "",
          "InSS actor checkpoint (empty: the one shipped in "
          "learner/checkpoints/). The planning experiment times inss with an "
          "untrained actor of each size's shape.");
ABSL_FLAG(int, ideal_max_models, 4,
          "Skip ideal (print -) for workloads with more models than this: "
          "its exhaustive search grows exponentially with them.");
ABSL_FLAG(std::string, planning_sizes, "9x8,100x100,1000x1000",
          "Models x GPUs of the planning-time runs.");
ABSL_FLAG(std::string, rules, "tessera",
          "Planning rules preset every policy plans with: tessera or paper.");
ABSL_FLAG(std::string, rules_override, "",
          "PlanningRules text overriding fields of --rules, e.g. 'gpulet { "
          "interference_check: GPULET_INTERFERENCE_CHECK_STRICT }'.");
ABSL_FLAG(std::string, corunner_rule, "sum",
          "Ground truth beside several busy partitions: sum, product or max.");
ABSL_FLAG(bool, efficiency, false,
          "throughput, checks, additions: also measure each limit's planner "
          "efficiency (MEASURES.md; about 2x the time).");
ABSL_FLAG(std::string, suite_half, "all",
          "additions: which half of the rules suite: all, calibration or "
          "held-out.");
ABSL_FLAG(std::string, reproduce, "gpulet,igniter,inss,las,abacus",
          "reproduce: the papers whose headline experiments to run, "
          "comma-separated: gpulet (schedulability, Figs. 16-17, and with "
          "--reproduce_simulate Fig. 13), igniter (GPUs and violations for "
          "W1-W12, Fig. 14, and Table 1), inss (six models on 4 GPUs at "
          "fixed loads, Figs. 15 and 17; --inss_checkpoint, default the "
          "shipped actor), inss-held-out (not by default: the actor on the "
          "workloads kept out of its training against inss-ni, inss-rr, "
          "bda-gpulet, bda-random and gpulet), las (three services on one "
          "device, Fig. 7; "
          "--cpu_models, --profile_dir), abacus (operator-group "
          "scheduling on the emulated A100 against FCFS, SJF and EDF, "
          "Figs. 14-19; --abacus_*); docs/reproduction.md.");
ABSL_FLAG(std::string, emulated_models, "configs/emulated/models",
          "reproduce=gpulet: the emulated set's model configs (the apps).");
ABSL_FLAG(std::string, glet_apps, "../shared/data/glet/apps",
          "reproduce=gpulet: the gpulet artifact's app definitions (game, "
          "traffic), read at run time.");
ABSL_FLAG(std::string, cpu_models, "models",
          "reproduce=las: the shipped models' repository (configs).");
ABSL_FLAG(std::string, profile_dir, "profiles",
          "reproduce: profiles, read from <dir>/cpu/ (las) and "
          "<dir>/emulated/ (gpulet's apps).");
ABSL_FLAG(int, reproduce_levels, 4,
          "reproduce: rate levels per model in gpulet's scenario grid "
          "(levels^4 - 1 scenarios).");
ABSL_FLAG(bool, reproduce_simulate, false,
          "reproduce: also simulate every plan at its scenario's rates and "
          "count those that hold (<= 1% violations per model; "
          "--duration_s, --min_requests), and run gpulet's Fig. 13 "
          "(SLO-preserved max throughput per workload).");
ABSL_FLAG(std::string, reproduce_out, "",
          "reproduce: a directory to write each paper's results to as "
          "CSV, <paper>.csv (and gpulet-emulated.csv, abacus-trace.csv; empty: "
          "none).");

ABSL_FLAG(std::string, abacus_data_dir, "../shared/data/abacus-a100",
          "reproduce=abacus: the authors' A100 group-latency predictors, the "
          "emulated A100's ground truth (read at run time).");
ABSL_FLAG(int, abacus_profile_groups, 2000,
          "reproduce=abacus: groups profiled per group size to learn "
          "Tessera's predictor (the paper: 2,000 per pair).");
ABSL_FLAG(int, abacus_profile_runs, 100,
          "reproduce=abacus: runs per profiled group (label: the trimmed "
          "median).");
ABSL_FLAG(int, abacus_queries, 1000, "reproduce=abacus: queries per run.");
ABSL_FLAG(std::string, abacus_training, "tessera",
          "reproduce=abacus: how the predictor is trained: tessera "
          "(standardised inputs, ln latency, Adam) or artifact (raw inputs, "
          "MSE on ms, SGD at 0.001).");
ABSL_FLAG(int, abacus_repeats, 1,
          "reproduce=abacus: runs (seeds) per set, scheduler and load.");
ABSL_FLAG(double, abacus_qos_load, 50,
          "reproduce=abacus: load of the QoS runs (Sec. 7.2; the paper: 50 "
          "QPS, GPU not saturated), in --abacus_qos_load_unit.");
ABSL_FLAG(std::string, abacus_qos_load_unit, "qps",
          "reproduce=abacus: qps (total QPS) or capacity (multiples of the "
          "set's sequential capacity, 1000 / mean ms of one query alone: "
          "the load that saturates the device run one query at a time).");
ABSL_FLAG(std::string, abacus_peak_loads, "1,1.25,1.5,2",
          "reproduce=abacus: loads of the peak-throughput runs (Sec. 7.3; "
          "the paper: 100 QPS at its mean batch of 15, saturated), in "
          "--abacus_peak_load_unit; a scheduler's peak throughput is its "
          "highest goodput among them.");
ABSL_FLAG(std::string, abacus_peak_load_unit, "capacity",
          "reproduce=abacus: qps or capacity, as --abacus_qos_load_unit.");
ABSL_FLAG(int, abacus_ways, 2,
          "reproduce=abacus: cut points per prediction call in the "
          "in-query search (artifact: 2, paper text: 4).");
ABSL_FLAG(double, abacus_early_stop_ms, 5,
          "reproduce=abacus: stop the in-query search below this budget "
          "(ms; the artifact's --thld).");
ABSL_FLAG(bool, abacus_pipeline, true,
          "reproduce=abacus: search the next group while the current one "
          "runs (the paper's Eq. 3); false decides when the device is "
          "free.");
ABSL_FLAG(std::string, abacus_classes, "pairs,triplets,quadruplet",
          "reproduce=abacus: which co-location classes to run.");

namespace tessera {
namespace {

std::vector<double> Doubles(const std::string& csv) {
  std::vector<double> v;
  for (absl::string_view s : absl::StrSplit(csv, ',', absl::SkipEmpty())) {
    v.push_back(std::stod(std::string(s)));
  }
  return v;
}

// The rules of --rules and --rules_override (checked in Run()).
PlanningRules FlagRules() {
  return *RulesFromFlags(absl::GetFlag(FLAGS_rules),
                         absl::GetFlag(FLAGS_rules_override));
}

// Every policy plans with gpulet's linear interference model (for the
// interference-aware ones) and the rules of the flags.
PolicyOptions Options(const V100Setup& setup) {
  PolicyOptions o;
  o.rules = FlagRules();
  o.interference = setup.linear;
  o.standby_shadows = absl::GetFlag(FLAGS_standby_shadows);
  o.inss_checkpoint = absl::GetFlag(FLAGS_inss_checkpoint);
  return o;
}

void Throughput(const V100Setup& setup) {
  const auto policies = absl::StrSplit(absl::GetFlag(FLAGS_policies), ',');
  std::vector<std::string> names(policies.begin(), policies.end());
  SimOptions options;
  options.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  options.min_requests = absl::GetFlag(FLAGS_min_requests);
  std::ofstream csv;
  if (!absl::GetFlag(FLAGS_csv).empty()) {
    csv.open(absl::GetFlag(FLAGS_csv));
    csv << "slo_factor,workload,policy,max_throughput_rps,violation_pct,"
           "gpus,share_sum,max_schedulable_scale,limit,efficiency\n";
  }
  for (double slo : Doubles(absl::GetFlag(FLAGS_slo_factors))) {
    std::printf(
        "\nSLO-preserved max throughput (req/s, every model <= 1%% "
        "violations in simulation), %d V100s, SLO = %.0fx batch-1 full-GPU "
        "latency, rules %s\n"
        "(v: the next load's plan broke 1 %%; else the policy refused it)\n\n",
        absl::GetFlag(FLAGS_gpus), slo, DescribeRules(FlagRules()).c_str());
    std::printf("%-26s", "workload");
    for (const auto& n : names) std::printf(" %13s", n.c_str());
    std::printf("\n");
    // Per workload and policy, for the fraction-of-ideal table.
    std::vector<std::pair<std::string, std::map<std::string, double>>> rows;
    for (const Workload& w : V100Workloads()) {
      std::vector<WorkloadModel> models;
      for (const auto& m : w.models) {
        models.push_back({m, absl::GetFlag(FLAGS_base_rate)});
      }
      const ClusterSnapshot snap =
          MakeV100Snapshot(setup, absl::GetFlag(FLAGS_gpus), models, slo);
      const ClusterSimulator sim(setup.truth.get(), Configs(snap));
      std::printf("%-26s", w.name.c_str());
      std::map<std::string, double> tput;
      for (const auto& n : names) {
        auto policy = PolicyRegistry::Create(n, Options(setup));
        if (!policy.ok()) {
          std::printf(" %13s", "error");
          continue;
        }
        if (n == "ideal" && static_cast<int>(w.models.size()) >
                                absl::GetFlag(FLAGS_ideal_max_models)) {
          std::printf(" %13s", "-");
          continue;
        }
        const SearchResult r =
            SearchMaxThroughput(**policy, snap, sim, options);
        if (r.inconclusive) {
          std::printf(" %13s", "(budget)");
          continue;
        }
        tput[n] = r.max_throughput_rps;
        double efficiency = 0;
        if (absl::GetFlag(FLAGS_efficiency)) {
          efficiency = PlannerEfficiency(r, snap, sim, options, 0.01);
          tput["efficiency:" + n] = efficiency;
        }
        // "v": the next load was planned and its plan broke 1 % (what a
        // policy must not do); unmarked: the policy refused it.
        const bool violated = r.limit == SearchResult::Limit::kViolated;
        std::printf(" %12.1f%s", r.max_throughput_rps, violated ? "v" : " ");
        if (csv.is_open()) {
          csv << slo << ",\"" << w.name << "\"," << n << ","
              << r.max_throughput_rps << ","
              << 100 * r.best.sim.max_model_violation_fraction() << ","
              << r.best.sim.gpus_used << "," << r.best.sim.share_sum << ","
              << r.max_schedulable_scale << ","
              << (violated                                   ? "violated"
                  : r.limit == SearchResult::Limit::kRefused ? "refused"
                                                             : "none")
              << "," << efficiency << "\n";
        }
      }
      std::printf("\n");
      std::fflush(stdout);
      rows.push_back({w.name, tput});
    }
    if (absl::GetFlag(FLAGS_efficiency)) {
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
    bool any = false;
    for (const auto& [name, t] : rows) any = any || t.count("ideal");
    if (!any) continue;
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
}

// iGniter's cost view: GPUs each policy's plan uses for a fixed workload
// set (every model at --base_rate, on up to 16 GPUs), and the simulated
// violations of the plans it calls feasible.
void GpusNeeded(const V100Setup& setup) {
  const auto policies = absl::StrSplit(absl::GetFlag(FLAGS_policies), ',');
  std::vector<std::string> names(policies.begin(), policies.end());
  SimOptions options;
  options.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  for (double slo : Doubles(absl::GetFlag(FLAGS_slo_factors))) {
    std::printf(
        "\nGPUs used / the worst model's simulated violations (%%) for every "
        "model at %.0f "
        "req/s, SLO %.0fx (- = refused on 16 GPUs)\n\n%-26s",
        absl::GetFlag(FLAGS_base_rate), slo, "workload");
    for (const auto& n : names) std::printf(" %15s", n.c_str());
    std::printf("\n");
    for (const Workload& w : V100Workloads()) {
      std::vector<WorkloadModel> models;
      for (const auto& m : w.models) {
        models.push_back({m, absl::GetFlag(FLAGS_base_rate)});
      }
      const ClusterSnapshot snap = MakeV100Snapshot(setup, 16, models, slo);
      const ClusterSimulator sim(setup.truth.get(), Configs(snap));
      std::printf("%-26s", w.name.c_str());
      for (const auto& n : names) {
        auto policy = PolicyRegistry::Create(n, Options(setup));
        if (!policy.ok() ||
            (n == "ideal" && static_cast<int>(w.models.size()) >
                                 absl::GetFlag(FLAGS_ideal_max_models))) {
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

// Schedulability sweep in the style of the gpulet paper's Section 3.2:
// every combination of per-model rates from {0, r, 2r} (all zero excluded)
// for the four models; a scenario counts for a policy when the policy
// plans it and the plan keeps violations <= 1 % in simulation.
void Sweep(const V100Setup& setup) {
  const std::vector<std::string> all = {"alexnet", "resnet50", "vgg19", "ssd"};
  const double r = absl::GetFlag(FLAGS_base_rate);
  const std::vector<std::string> names = {"sbp", "greedy", "gpulet-noint",
                                          "gpulet"};
  SimOptions options;
  options.duration = absl::Seconds(10);
  std::printf(
      "\nSchedulability sweep: rates in {0, %.0f, %.0f} req/s per model "
      "(80 scenarios), %d GPUs, SLO 5x\n\n",
      r, 2 * r, absl::GetFlag(FLAGS_gpus));
  std::printf("%-13s %12s %16s %16s\n", "policy", "planned", "held (<=1%)",
              "planned but >1%");
  for (const auto& n : names) {
    auto policy = PolicyRegistry::Create(n, Options(setup));
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
          MakeV100Snapshot(setup, absl::GetFlag(FLAGS_gpus), models, 5);
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

// How much the results depend on the rule that fills L(b>1, 100%): the
// four-model mix on 4 GPUs, and each model alone on one GPU at SLO 10x,
// where a whole GPU's throughput depends on L(b, 100%) directly.
void Share100(const std::string& path) {
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
  options.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  for (const Case& c : cases) {
    std::printf("%-34s %-13s", c.name.c_str(), c.policy.c_str());
    for (const auto& setup : setups) {
      std::vector<WorkloadModel> models;
      for (const auto& m : c.models) {
        models.push_back({m, absl::GetFlag(FLAGS_base_rate)});
      }
      const ClusterSnapshot snap =
          MakeV100Snapshot(*setup, c.gpus, models, c.slo);
      const ClusterSimulator sim(setup->truth.get(), Configs(snap));
      auto policy = PolicyRegistry::Create(c.policy, Options(*setup));
      const SearchResult r = SearchMaxThroughput(**policy, snap, sim, options);
      std::printf(" %13.1f", r.max_throughput_rps);
    }
    std::printf("\n");
  }
}

// Planning time of gpulet: V100 models replicated under new names, SLOs
// drawn from 3-10x batch-1 latency, rates sized so the cluster is about
// half loaded.
void Planning(const V100Setup& setup) {
  std::printf("\nPlanning time per policy (median of 5 runs)\n\n");
  std::printf("%-13s %8s %6s %12s %14s %10s\n", "policy", "models", "GPUs",
              "time (ms)", "result", "GPUs used");
  const auto policies = absl::StrSplit(absl::GetFlag(FLAGS_policies), ',');
  std::vector<std::string> names(policies.begin(), policies.end());
  const std::vector<std::string> base = {"alexnet", "resnet50", "vgg19", "ssd"};
  std::vector<std::pair<int, int>> sizes;
  for (absl::string_view size : absl::StrSplit(
           absl::GetFlag(FLAGS_planning_sizes), ',', absl::SkipEmpty())) {
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
      if (name == "ideal" && n_models > absl::GetFlag(FLAGS_ideal_max_models)) {
        continue;
      }
      // Each policy's planning time grows differently; keep the big sizes
      // for the ones that finish them quickly.
      if (n_models > 100 && (name == "las" || name == "igniter")) continue;
      PolicyOptions o = Options(setup);
      auto policy = PolicyRegistry::Create(name, o);
      if (name == "inss") {
        // The checkpoint's shape is fixed; time an actor of this shape.
        auto actor =
            TorchInssActor::Untrained(V100InssInfo(base, n_models, n_gpus), 1);
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

RulesReport::Options ReportOptions(const V100Setup& setup) {
  RulesReport::Options o;
  o.study.gpus = absl::GetFlag(FLAGS_gpus);
  o.study.base_rate_rps = absl::GetFlag(FLAGS_base_rate);
  o.study.sim.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  o.study.sim.min_requests = absl::GetFlag(FLAGS_min_requests);
  o.study.efficiency = absl::GetFlag(FLAGS_efficiency);
  o.policy = Options(setup);
  o.rules_preset = absl::GetFlag(FLAGS_rules);
  o.rules_override = absl::GetFlag(FLAGS_rules_override);
  o.slo_factors = Doubles(absl::GetFlag(FLAGS_slo_factors));
  o.policies = absl::GetFlag(FLAGS_policies);
  o.suite_half = absl::GetFlag(FLAGS_suite_half);
  return o;
}

// A rule preset with --rules_override on top; errors are printed.
absl::StatusOr<PolicyOptions> PresetOptions(const V100Setup& setup,
                                            const std::string& preset) {
  PolicyOptions o = Options(setup);
  ASSIGN_OR_RETURN(auto rules,
                   RulesFromFlags(preset, absl::GetFlag(FLAGS_rules_override)));
  o.rules = rules;
  return o;
}

constexpr const char* kPresets[] = {"paper", "tessera"};

absl::Status ReproduceGpulet(const V100Setup& setup,
                             std::map<std::string, std::string>* csvs) {
  GpuletReproduction::Options options;
  options.gpus = absl::GetFlag(FLAGS_gpus);
  options.levels = absl::GetFlag(FLAGS_reproduce_levels);
  options.simulate = absl::GetFlag(FLAGS_reproduce_simulate);
  options.sim.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  options.sim.min_requests = absl::GetFlag(FLAGS_min_requests);
  const GpuletReproduction reproduction(&setup, options);
  ASSIGN_OR_RETURN(const auto emulated,
                   LoadEmulatedSetup(absl::GetFlag(FLAGS_emulated_models),
                                     absl::GetFlag(FLAGS_profile_dir), 0));
  // The sweep on the emulated set: its five models, one level fewer (its
  // grid has 5 dimensions).
  GpuletReproduction::Options emulated_options = options;
  emulated_options.emulated = emulated.get();
  emulated_options.models = emulated->repository->ModelNames();
  emulated_options.levels = std::max(2, options.levels - 1);
  const GpuletReproduction on_emulated(&setup, emulated_options);
  for (const char* preset : kPresets) {
    ASSIGN_OR_RETURN(const PolicyOptions o, PresetOptions(setup, preset));
    ASSIGN_OR_RETURN(const auto result, reproduction.Run(o));
    reproduction.Print(result, DescribeRules(o.rules), stdout);
    reproduction.AppendCsv(result, preset, &(*csvs)["gpulet"]);
    // The emulated set plans with its own interference model.
    PolicyOptions e = o;
    e.interference = emulated->interference;
    ASSIGN_OR_RETURN(const auto emulated_result, on_emulated.Run(e));
    on_emulated.Print(emulated_result, DescribeRules(o.rules), stdout);
    on_emulated.AppendCsv(emulated_result, preset, &(*csvs)["gpulet-emulated"]);
    if (absl::GetFlag(FLAGS_reproduce_simulate)) {
      ASSIGN_OR_RETURN(const auto throughput, reproduction.RunThroughput(o));
      reproduction.PrintThroughput(throughput, DescribeRules(o.rules), stdout);
      ASSIGN_OR_RETURN(
          const auto apps,
          reproduction.RunApps(*emulated, absl::GetFlag(FLAGS_glet_apps), e));
      reproduction.PrintApps(apps, DescribeRules(o.rules), stdout);
    }
  }
  return absl::OkStatus();
}

absl::Status ReproduceIgniter(const V100Setup& setup,
                              std::map<std::string, std::string>* csvs) {
  std::string* csv = &(*csvs)["igniter"];
  IgniterReproduction::Options options;
  options.sim.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  const IgniterReproduction reproduction(&setup, options);
  for (const char* preset : kPresets) {
    ASSIGN_OR_RETURN(PolicyOptions o, PresetOptions(setup, preset));
    // iGniter's shadow processes (Sec. 4.2) are part of its design.
    o.standby_shadows = true;
    ASSIGN_OR_RETURN(const auto result, reproduction.Run(o));
    reproduction.Print(result, DescribeRules(o.rules), stdout);
    IgniterReproduction::AppendCsv(result, preset, csv);
  }
  return absl::OkStatus();
}

absl::Status ReproduceInss(const V100Setup& setup,
                           std::map<std::string, std::string>* csvs) {
  std::string* csv = &(*csvs)["inss"];
  InssReproduction::Options options;
  options.gpus = absl::GetFlag(FLAGS_gpus);
  options.sim.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  options.sim.min_requests = absl::GetFlag(FLAGS_min_requests);
  const InssReproduction reproduction(&setup, options);
  for (const char* preset : kPresets) {
    // --inss_checkpoint empty: the shipped actor (learner/checkpoints/
    // inss_v100: up to 9 instances of the V100 models on 1-8 V100s).
    ASSIGN_OR_RETURN(const PolicyOptions o, PresetOptions(setup, preset));
    ASSIGN_OR_RETURN(const auto result, reproduction.Run(o));
    reproduction.Print(result, DescribeRules(o.rules),
                       InssReproduction::Verdicts(result), stdout);
    InssReproduction::AppendCsv(result, preset, csv);
  }
  return absl::OkStatus();
}

// The InSS actor on the workloads kept out of its training (V100InssHeldOut),
// each at a fixed rate mix drawn once (seed 2026, weights uniform in
// [0.5, 1.5], independent of training), against its ablations and the
// best of 1,000 random placements under BDA, at fixed loads of 0.5, 1 and
// 2 x that best placement's SLO-preserved maximum. Tessera rules.
absl::Status ReproduceInssHeldOut(const V100Setup& setup,
                                  std::map<std::string, std::string>* csvs) {
  std::string* csv = &(*csvs)["inss-held-out"];
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> weight(0.5, 1.5);
  ASSIGN_OR_RETURN(const PolicyOptions o, PresetOptions(setup, "tessera"));
  std::vector<ReproductionClaim> claims;
  for (const std::string& key : V100InssHeldOut()) {
    ASSIGN_OR_RETURN(auto w, InssWorkloadSampler::ParseKey(key));
    InssReproduction::Options options;
    std::map<std::string, int> seen;
    for (const std::string& m : w.models) {
      options.models.push_back(absl::StrCat(m, "/", ++seen[m]));
      options.rate_weights.push_back(weight(rng));
    }
    options.gpus = w.gpus;
    options.policies = {"inss",       "inss-ni",    "inss-rr",
                        "bda-gpulet", "bda-random", "gpulet"};
    options.load_fractions = {0.5, 1, 2};
    options.reference = "bda-random";
    options.sim.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
    options.sim.min_requests = absl::GetFlag(FLAGS_min_requests);
    const InssReproduction reproduction(&setup, options);
    ASSIGN_OR_RETURN(const auto result, reproduction.Run(o));
    const auto mine = InssReproduction::ActorVerdicts(result, key);
    reproduction.Print(result, DescribeRules(o.rules), mine, stdout);
    InssReproduction::AppendCsv(result, absl::StrCat("tessera:", key), csv);
    claims.insert(claims.end(), mine.begin(), mine.end());
  }
  std::printf("\nInSS's actor on the held-out workloads, all together:\n");
  PrintClaims(claims, stdout);
  return absl::OkStatus();
}

// LAS's two settings: the shipped models on one 2-core CPU device, and
// one V100 with the closest measured models.
absl::Status ReproduceAbacus(std::map<std::string, std::string>* csvs) {
  AbacusReproduction::Options options;
  options.data_dir = absl::GetFlag(FLAGS_abacus_data_dir);
  options.profile_groups = absl::GetFlag(FLAGS_abacus_profile_groups);
  options.profile_runs = absl::GetFlag(FLAGS_abacus_profile_runs);
  options.queries = absl::GetFlag(FLAGS_abacus_queries);
  const std::string training = absl::GetFlag(FLAGS_abacus_training);
  if (training != "tessera" && training != "artifact") {
    return absl::InvalidArgumentError(
        "--abacus_training must be tessera or artifact, not '" + training +
        "'");
  }
  options.artifact_training = training == "artifact";
  options.repeats = absl::GetFlag(FLAGS_abacus_repeats);
  for (const std::string& unit : {absl::GetFlag(FLAGS_abacus_qos_load_unit),
                                  absl::GetFlag(FLAGS_abacus_peak_load_unit)}) {
    if (unit != "capacity" && unit != "qps") {
      return absl::InvalidArgumentError(
          "--abacus_*_load_unit must be capacity or qps, not '" + unit + "'");
    }
  }
  options.qos_load_in_capacity =
      absl::GetFlag(FLAGS_abacus_qos_load_unit) == "capacity";
  options.peak_load_in_capacity =
      absl::GetFlag(FLAGS_abacus_peak_load_unit) == "capacity";
  options.qos_load = absl::GetFlag(FLAGS_abacus_qos_load);
  options.peak_loads.clear();
  for (absl::string_view l :
       absl::StrSplit(absl::GetFlag(FLAGS_abacus_peak_loads), ',')) {
    double load = 0;
    if (!absl::SimpleAtod(l, &load) || load <= 0) {
      return absl::InvalidArgumentError(
          "--abacus_peak_loads: positive numbers, comma-separated");
    }
    options.peak_loads.push_back(load);
  }
  options.sim.abacus.ways = absl::GetFlag(FLAGS_abacus_ways);
  options.sim.abacus.early_stop_ms = absl::GetFlag(FLAGS_abacus_early_stop_ms);
  options.sim.pipeline = absl::GetFlag(FLAGS_abacus_pipeline);
  options.classes = absl::StrSplit(absl::GetFlag(FLAGS_abacus_classes), ',');
  for (const std::string& c : options.classes) {
    if (c != "pairs" && c != "triplets" && c != "quadruplet") {
      return absl::InvalidArgumentError(
          "--abacus_classes: unknown class '" + c +
          "' (known: pairs, triplets, quadruplet)");
    }
  }
  if (options.profile_groups < 10 || options.profile_runs < 1 ||
      options.queries < 1 || options.repeats < 1 ||
      options.sim.abacus.ways < 1 || options.qos_load <= 0) {
    return absl::InvalidArgumentError(
        "--abacus_*: groups >= 10, runs, queries, repeats and ways >= 1, "
        "loads > 0");
  }
  const AbacusReproduction reproduction(options);
  ASSIGN_OR_RETURN(const auto result, reproduction.Run());
  reproduction.Print(result, stdout);
  AbacusReproduction::AppendCsv(result, &(*csvs)["abacus"]);
  (*csvs)["abacus-trace"] = AbacusReproduction::TraceCsv(result);
  return absl::OkStatus();
}

absl::Status ReproduceLas(const V100Setup& setup,
                          std::map<std::string, std::string>* csvs) {
  std::string* csv = &(*csvs)["las"];
  ASSIGN_OR_RETURN(
      const auto cpu,
      LoadEmulatedSetup(absl::GetFlag(FLAGS_cpu_models),
                        absl::GetFlag(FLAGS_profile_dir), 0, "cpu"));
  std::vector<LasReproduction::Setting> settings;
  ASSIGN_OR_RETURN(settings.emplace_back(), LasReproduction::CpuSetting(*cpu));
  ASSIGN_OR_RETURN(settings.emplace_back(),
                   LasReproduction::V100Setting(setup));
  LasReproduction::Options options;
  options.sim.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  options.sim.min_requests = absl::GetFlag(FLAGS_min_requests);
  const LasReproduction reproduction(options);
  for (const char* preset : kPresets) {
    ASSIGN_OR_RETURN(const PolicyOptions o, PresetOptions(setup, preset));
    ASSIGN_OR_RETURN(const auto result, reproduction.Run(settings, o));
    reproduction.Print(result, DescribeRules(o.rules), stdout);
    reproduction.AppendCsv(result, preset, csv);
  }
  return absl::OkStatus();
}

// InSS's training environment against the simulator on random placements
// of the held-out workloads (sim/inss_env_fidelity.h).
absl::Status InssFidelity(const V100Setup& setup) {
  const InssCheckpointInfo info =
      V100InssInfo({"alexnet", "resnet50", "vgg19", "ssd"}, 9, 8);
  InssWorkloadSamplerOptions sampler_options;
  ASSIGN_OR_RETURN(const InssWorkloadSampler sampler,
                   V100InssSampler(setup, info, sampler_options));
  InssEnvFidelity::Options options;
  options.sim.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  options.sim.min_requests = absl::GetFlag(FLAGS_min_requests);
  const InssEnvFidelity study(&setup, &sampler, options);
  ASSIGN_OR_RETURN(const auto result, study.Run());
  InssEnvFidelity::Print(result, stdout);
  const std::string csv = absl::GetFlag(FLAGS_csv);
  if (!csv.empty()) {
    std::ofstream(csv) << InssEnvFidelity::Csv(result);
  }
  return absl::OkStatus();
}

// The papers' headline experiments, each under the paper and the
// tessera rules (with --rules_override on top of both).
int Reproduce(const V100Setup& setup) {
  const std::vector<std::string> papers =
      absl::StrSplit(absl::GetFlag(FLAGS_reproduce), ',');
  for (const std::string& paper : papers) {
    if (paper != "gpulet" && paper != "igniter" && paper != "inss" &&
        paper != "inss-held-out" && paper != "las" && paper != "abacus") {
      std::fprintf(stderr,
                   "--reproduce=%s: unknown paper (known: gpulet, igniter, "
                   "inss, inss-held-out, las, abacus)\n",
                   paper.c_str());
      return 2;
    }
  }
  const std::string dir = absl::GetFlag(FLAGS_reproduce_out);
  for (const std::string& paper : papers) {
    std::map<std::string, std::string> csvs;  // file stem -> content
    const absl::Status status =
        paper == "gpulet"          ? ReproduceGpulet(setup, &csvs)
        : paper == "igniter"       ? ReproduceIgniter(setup, &csvs)
        : paper == "inss"          ? ReproduceInss(setup, &csvs)
        : paper == "inss-held-out" ? ReproduceInssHeldOut(setup, &csvs)
        : paper == "abacus"        ? ReproduceAbacus(&csvs)
                                   : ReproduceLas(setup, &csvs);
    if (!status.ok()) {
      std::fprintf(stderr, "%s\n", status.ToString().c_str());
      return absl::IsInvalidArgument(status) ? 2 : 1;
    }
    if (dir.empty()) continue;
    for (const auto& [stem, csv] : csvs) {
      const std::string path = absl::StrCat(dir, "/", stem, ".csv");
      std::ofstream file(path);
      file << csv;
      if (!file) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        return 1;
      }
    }
  }
  return 0;
}

int Run() {
  auto rules = RulesFromFlags(absl::GetFlag(FLAGS_rules),
                              absl::GetFlag(FLAGS_rules_override));
  if (!rules.ok()) {
    std::fprintf(stderr, "%s\n", rules.status().ToString().c_str());
    return 2;
  }
  const std::string half = absl::GetFlag(FLAGS_suite_half);
  if (half != "all" && half != "calibration" && half != "held-out") {
    std::fprintf(stderr, "--suite_half must be all, calibration or held-out\n");
    return 2;
  }
  const std::vector<std::string> known = {
      "throughput", "sweep",     "gpus",  "share100",  "planning",     "checks",
      "additions",  "calibrate", "suite", "reproduce", "inss-fidelity"};
  for (absl::string_view e :
       absl::StrSplit(absl::GetFlag(FLAGS_experiments), ',')) {
    if (std::find(known.begin(), known.end(), e) == known.end()) {
      std::fprintf(stderr, "unknown experiment '%s'; known: %s\n",
                   std::string(e).c_str(), absl::StrJoin(known, ", ").c_str());
      return 2;
    }
  }
  auto corunner =
      GroundTruth::ParseCorunnerRule(absl::GetFlag(FLAGS_corunner_rule));
  if (!corunner.ok()) {
    std::fprintf(stderr, "%s\n", corunner.status().ToString().c_str());
    return 2;
  }
  auto setup = LoadV100Setup(absl::GetFlag(FLAGS_v100_profile),
                             Share100Rule::kBatch1Ratio, 0);
  if (!setup.ok()) {
    std::fprintf(stderr, "%s\n", setup.status().ToString().c_str());
    return 2;
  }
  (*setup)->truth->set_corunner_rule(*corunner);
  const RulesReport report(setup->get(), ReportOptions(**setup), stdout);
  for (absl::string_view e :
       absl::StrSplit(absl::GetFlag(FLAGS_experiments), ',')) {
    if (e == "checks") report.Checks();
    if (e == "additions") report.Additions();
    if (e == "calibrate") report.Calibrate();
    if (e == "suite") report.Suite();
    if (e == "throughput") Throughput(**setup);
    if (e == "sweep") Sweep(**setup);
    if (e == "gpus") GpusNeeded(**setup);
    if (e == "share100") Share100(absl::GetFlag(FLAGS_v100_profile));
    if (e == "planning") Planning(**setup);
    if (e == "inss-fidelity") {
      const absl::Status s = InssFidelity(**setup);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
    }
    if (e == "reproduce") {
      const int rc = Reproduce(**setup);
      if (rc != 0) return rc;
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Scheduling-core experiments on iGniter's V100 measurements: "
      "SLO-preserved max throughput per policy and workload, a "
      "schedulability sweep, sensitivity to the 100% extrapolation, and "
      "planning time. Prints tables; --csv writes the throughput table.");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
