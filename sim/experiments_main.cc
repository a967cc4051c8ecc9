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
#include "scheduler/inss_policy.h"
#include "scheduler/mlp_inss_actor.h"
#include "scheduler/policy_registry.h"
#include "sim/abacus_reproduction.h"
#include "sim/emulated_workload.h"
#include "sim/gpulet_reproduction.h"
#include "sim/igniter_reproduction.h"
#include "sim/inss_env_fidelity.h"
#include "sim/inss_reproduction.h"
#include "sim/inss_v100_setup.h"
#include "sim/las_reproduction.h"
#include "sim/replan_study.h"
#include "sim/rules_report.h"
#include "sim/rules_study.h"
#include "sim/throughput_search.h"
#include "sim/v100_experiments.h"
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
          "--suite_half), compare (--policies per case of --suite_half, "
          "against the best non-oracle policy and the best known, with "
          "tessera's gain over the best seed policy), calibrate (each "
          "policy family's margins on the "
          "suite's calibration half, "
          "checked on the held-out half), reproduce (the papers' headline "
          "experiments of --reproduce, with a verdict per claim, under the "
          "paper and the tessera rules), inss-fidelity (InSS's training "
          "environment against the simulator on 200 random placements of "
          "the held-out workloads, and whether Eq. 3 ranks one state's "
          "placements as BDA headroom does; --csv writes the samples), "
          "replan "
          "(--policies re-planning rate changes of the --suite_half cases "
          "with the plan in force and without: gpulets moved and the "
          "throughput each plan holds).");
ABSL_FLAG(std::string, slo_factors, "3,5,10", "SLO factors (x L(1,100%)).");
ABSL_FLAG(std::string, policies,
          "sbp,greedy,gpulet-noint,gpulet,igniter,inss,las,ideal-layout,ideal",
          "Policies to compare.");
ABSL_FLAG(std::string, interference, "linear",
          "Interference model the interference-aware policies (and tessera's "
          "shared check) plan with: linear (gpulet's), pairwise (Tessera's) "
          "or none. The ground truth is the measured co-location data "
          "either way.");
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
          "InSS actor checkpoint (empty: the SAC-trained one shipped in "
          "learner/checkpoints/inss_v100; learner/checkpoints/inss_v100_search "
          "is the same network trained to imitate a placement search). The "
          "planning experiment times inss with an untrained actor of each "
          "size's shape.");
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
          "bda-gpulet, bda-random, bda-search and gpulet), las (three services "
          "on one device, Fig. 7; "
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

// Every policy plans with the --interference model (for the
// interference-aware ones) and the rules of the flags.
PolicyOptions Options(const V100Setup& setup) {
  PolicyOptions o;
  o.rules = FlagRules();
  // Checked in Run().
  o.interference = *V100Interference(setup, absl::GetFlag(FLAGS_interference));
  o.fits = MakeV100Fits(setup, o.rules);
  o.standby_shadows = absl::GetFlag(FLAGS_standby_shadows);
  // Loaded once; where it cannot be, the inss rows say why at creation.
  auto actor =
      MlpInssActor::LoadOrShipped(absl::GetFlag(FLAGS_inss_checkpoint));
  if (actor.ok()) {
    o.inss_actor = *std::move(actor);
  } else {
    std::fprintf(stderr, "inss actor: %s\n", actor.status().ToString().c_str());
  }
  return o;
}

V100Experiments::Options ExperimentOptions(const V100Setup& setup) {
  V100Experiments::Options o;
  o.policies = absl::GetFlag(FLAGS_policies);
  o.slo_factors = Doubles(absl::GetFlag(FLAGS_slo_factors));
  o.base_rate_rps = absl::GetFlag(FLAGS_base_rate);
  o.gpus = absl::GetFlag(FLAGS_gpus);
  o.duration_s = absl::GetFlag(FLAGS_duration_s);
  o.min_requests = absl::GetFlag(FLAGS_min_requests);
  o.csv = absl::GetFlag(FLAGS_csv);
  o.efficiency = absl::GetFlag(FLAGS_efficiency);
  o.ideal_max_models = absl::GetFlag(FLAGS_ideal_max_models);
  o.planning_sizes = absl::GetFlag(FLAGS_planning_sizes);
  o.policy = Options(setup);
  o.interference = absl::GetFlag(FLAGS_interference);
  o.untrained_inss_actor = [](const InssCheckpointInfo& info)
      -> absl::StatusOr<std::shared_ptr<const InssActor>> {
    ASSIGN_OR_RETURN(auto actor, MlpInssActor::Untrained(info, 1));
    return std::shared_ptr<const InssActor>(std::move(actor));
  };
  return o;
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
  o.fits = MakeV100Fits(setup, o.rules);
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
    options.policies = {"inss",       "inss-ni",    "inss-rr", "bda-gpulet",
                        "bda-random", "bda-search", "gpulet"};
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

// Each of --policies re-planning rate changes of the --suite_half cases
// with its plan in force and without (sim/replan_study.h).
absl::Status Replan(const V100Setup& setup) {
  ReplanStudy::Options options;
  options.gpus = absl::GetFlag(FLAGS_gpus);
  options.base_rate_rps = absl::GetFlag(FLAGS_base_rate);
  options.sim.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  options.sim.min_requests = absl::GetFlag(FLAGS_min_requests);
  const ReplanStudy study(&setup, options);
  const std::vector<SuiteCase> cases =
      SuiteHalf(absl::GetFlag(FLAGS_suite_half));
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_policies), ',', absl::SkipEmpty())) {
    std::printf(
        "\nRe-planning, %s: %d rate changes per case (each model's rate x "
        "U[%.2f, %.2f]) from %.2f x its SLO-preserved max, planned with the "
        "plan in force (incremental) and without (scratch); new gpulets "
        "against the plan in force\n",
        std::string(name).c_str(), options.changes, 1 - options.spread,
        1 + options.spread, options.load);
    ASSIGN_OR_RETURN(const auto results,
                     study.Run(std::string(name), Options(setup), cases));
    ReplanStudy::Print(results, stdout);
    std::fflush(stdout);
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
      "throughput", "sweep",         "gpus",      "share100", "planning",
      "checks",     "additions",     "calibrate", "suite",    "compare",
      "reproduce",  "inss-fidelity", "replan"};
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
  if (auto model = V100Interference(**setup, absl::GetFlag(FLAGS_interference));
      !model.ok()) {
    std::fprintf(stderr, "--interference: %s\n",
                 std::string(model.status().message()).c_str());
    return 2;
  }
  (*setup)->truth->set_corunner_rule(*corunner);
  const RulesReport report(setup->get(), ReportOptions(**setup), stdout);
  const V100Experiments experiments(ExperimentOptions(**setup));
  for (absl::string_view e :
       absl::StrSplit(absl::GetFlag(FLAGS_experiments), ',')) {
    if (e == "checks") report.Checks();
    if (e == "additions") report.Additions();
    if (e == "calibrate") report.Calibrate();
    if (e == "suite") report.Suite();
    if (e == "compare") report.Compare();
    if (e == "throughput") experiments.Throughput(**setup);
    if (e == "sweep") experiments.Sweep(**setup);
    if (e == "gpus") experiments.GpusNeeded(**setup);
    if (e == "share100")
      experiments.Share100(absl::GetFlag(FLAGS_v100_profile));
    if (e == "planning") experiments.Planning(**setup);
    if (e == "inss-fidelity") {
      const absl::Status s = InssFidelity(**setup);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
    }
    if (e == "replan") {
      const absl::Status s = Replan(**setup);
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
