// tessera_simulator: runs scheduling policies on a simulated cluster of
// V100s whose ground truth is iGniter's public measurements.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "common/usage.h"
#include "scheduler/mlp_inss_actor.h"
#include "scheduler/policy_registry.h"
#include "scheduler/profile_fits.h"
#include "sim/cluster_simulator.h"
#include "sim/emulated_workload.h"
#include "sim/throughput_search.h"
#include "sim/v100_workload.h"

ABSL_FLAG(std::string, v100_profile,
          "../shared/data/igniter-v100/profile.jsonl",
          "iGniter's public V100 measurements (profile.jsonl).");
ABSL_FLAG(std::string, share100_rule, "batch1-ratio",
          "L(b>1,100%): batch1-ratio, same-as-80 or omit.");
ABSL_FLAG(std::string, policy, "gpulet",
          "Comma-separated scheduling policies to run.");
ABSL_FLAG(std::string, interference, "linear",
          "Interference model interference-aware policies plan with: "
          "linear (gpulet's), pairwise (Tessera's) or none.");
ABSL_FLAG(std::string, inss_checkpoint, "",
          "Actor checkpoint of --policy=inss (empty: the one shipped in "
          "learner/checkpoints/, trained for the V100 models on 1-8 GPUs; "
          "learner/checkpoints/inss_v100_search: the same network trained to "
          "imitate a placement search).");
ABSL_FLAG(std::string, inss_fallback, "",
          "Policy that plans what the InSS checkpoint was not trained for "
          "(empty: refuse).");
ABSL_FLAG(std::string, models, "alexnet,resnet50,vgg19,ssd",
          "Comma-separated model instances (replicas: alexnet/2).");
ABSL_FLAG(double, rate, 100, "Request rate per model (req/s).");
ABSL_FLAG(double, slo_factor, 5,
          "SLO = factor x the model's batch-1 full-GPU latency.");
ABSL_FLAG(int, gpus, 4, "GPUs in the cluster.");
ABSL_FLAG(double, duration_s, 20, "Simulated seconds per run.");
ABSL_FLAG(double, noise, 0, "Relative log-normal noise on latencies.");
ABSL_FLAG(int, seed, 1, "Random seed.");
ABSL_FLAG(bool, search, false,
          "Search the SLO-preserved max throughput (<= 1% violations) "
          "instead of one run at --rate.");
ABSL_FLAG(bool, print_plan, false, "Print each policy's plan.");
ABSL_FLAG(bool, overload, false,
          "--search: when the policy refuses a load, plan for 80%, 64%, ... "
          "of it as the live frontend does (to predict the live cluster).");
ABSL_FLAG(std::string, setup, "v100",
          "v100: iGniter's V100 measurements (../shared/data); emulated: the "
          "shipped emulated GPU model set (predicts the live emulated "
          "cluster at time scale 1).");
ABSL_FLAG(std::string, rates, "",
          "model:req/s,... per model (overrides --models and --rate).");
ABSL_FLAG(std::string, model_repository, "configs/emulated/models",
          "--setup=emulated: model configs (SLOs, max batch).");
ABSL_FLAG(std::string, profile_dir, "profiles",
          "--setup=emulated: directory with emulated/<model>.pbtxt.");
ABSL_FLAG(std::string, rules, "tessera",
          "Planning rules preset: tessera (calibrated defaults) or paper "
          "(each policy exactly as its paper; docs/scheduling.md).");
ABSL_FLAG(std::string, rules_override, "",
          "PlanningRules text overriding single fields of --rules, e.g. "
          "'gpulet { interference_check: GPULET_INTERFERENCE_CHECK_STRICT }' "
          "(proto/policy_rules.proto).");
ABSL_FLAG(double, min_requests, 1000,
          "--search: simulate long enough that every model sees at least "
          "this many requests (MEASURES.md: one violation < 0.1 %).");
ABSL_FLAG(std::string, corunner_rule, "sum",
          "Ground truth beside several busy partitions: sum (1 + sum of the "
          "pairwise excesses), product or max.");
ABSL_FLAG(bool, efficiency, false,
          "--search: also measure the planner efficiency at the limit "
          "(MEASURES.md).");
ABSL_FLAG(std::string, trace, "",
          "CSV with lines 'model,seconds' to replay instead of Poisson "
          "arrivals (the plan is made for the trace's average rates).");

namespace tessera {
namespace {

// The measured cluster of --setup: the V100 data or the emulated set.
struct Setup {
  std::unique_ptr<V100Setup> v100;
  std::unique_ptr<EmulatedSetup> emulated;
  GroundTruth* truth() const {
    return emulated ? emulated->truth.get() : v100->truth.get();
  }
};

absl::StatusOr<Setup> LoadSetup() {
  const std::string which = absl::GetFlag(FLAGS_setup);
  Setup setup;
  if (which == "emulated") {
    ASSIGN_OR_RETURN(setup.emulated,
                     LoadEmulatedSetup(absl::GetFlag(FLAGS_model_repository),
                                       absl::GetFlag(FLAGS_profile_dir),
                                       absl::GetFlag(FLAGS_noise)));
    return setup;
  }
  if (which != "v100") {
    return absl::InvalidArgumentError("--setup must be v100 or emulated");
  }
  ASSIGN_OR_RETURN(Share100Rule rule,
                   ParseShare100Rule(absl::GetFlag(FLAGS_share100_rule)));
  ASSIGN_OR_RETURN(setup.v100, LoadV100Setup(absl::GetFlag(FLAGS_v100_profile),
                                             rule, absl::GetFlag(FLAGS_noise)));
  return setup;
}

// The models and rates of --rates, or of --models at --rate.
absl::StatusOr<std::vector<WorkloadModel>> WorkloadFromFlags() {
  std::vector<WorkloadModel> workload;
  if (absl::GetFlag(FLAGS_rates).empty()) {
    for (absl::string_view m :
         absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipEmpty())) {
      workload.push_back({std::string(m), absl::GetFlag(FLAGS_rate)});
    }
    return workload;
  }
  for (absl::string_view p :
       absl::StrSplit(absl::GetFlag(FLAGS_rates), ',', absl::SkipEmpty())) {
    std::vector<std::string> kv = absl::StrSplit(p, ':');
    double r;
    if (kv.size() != 2 || !absl::SimpleAtod(kv[1], &r)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad --rates entry '", p, "'"));
    }
    workload.push_back({kv[0], r});
  }
  return workload;
}

// --trace's arrival times per model (sorted), and the workload of their
// average rates.
absl::Status ReadTrace(const std::string& path,
                       std::map<std::string, std::vector<double>>* trace,
                       std::vector<WorkloadModel>* workload) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("cannot open trace " + path);
  std::string line;
  double last = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> parts = absl::StrSplit(line, ',');
    double t;
    if (parts.size() != 2 || !absl::SimpleAtod(parts[1], &t)) continue;
    (*trace)[parts[0]].push_back(t);
    last = std::max(last, t);
  }
  workload->clear();
  for (auto& [m, times] : *trace) {
    std::sort(times.begin(), times.end());
    workload->push_back({m, times.size() / std::max(last, 1e-9)});
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterSnapshot> SnapshotOf(
    const Setup& setup, const std::vector<WorkloadModel>& workload) {
  const int gpus = absl::GetFlag(FLAGS_gpus);
  ClusterSnapshot snapshot =
      setup.emulated ? MakeEmulatedSnapshot(*setup.emulated, gpus, workload)
                     : MakeV100Snapshot(*setup.v100, gpus, workload,
                                        absl::GetFlag(FLAGS_slo_factor));
  if (snapshot.models.size() == workload.size()) return snapshot;
  const std::string known =
      setup.emulated
          ? absl::StrJoin(setup.emulated->repository->ModelNames(), ", ")
          : absl::StrJoin(
                setup.v100->data.profiles, ", ",
                [](std::string* out, const auto& p) { out->append(p.first); });
  return absl::InvalidArgumentError(
      "unknown model in --models/--rates; known: " + known);
}

// What every policy plans with: the rules, InSS's actor, the interference
// model of --interference (the emulated set's own for linear and pairwise)
// and the fits of the snapshot's profiles.
absl::StatusOr<PolicyOptions> PolicyOptionsFromFlags(
    const Setup& setup, const ClusterSnapshot& snapshot) {
  PolicyOptions options;
  ASSIGN_OR_RETURN(options.rules,
                   RulesFromFlags(absl::GetFlag(FLAGS_rules),
                                  absl::GetFlag(FLAGS_rules_override)));
  if (auto actor =
          MlpInssActor::LoadOrShipped(absl::GetFlag(FLAGS_inss_checkpoint));
      actor.ok()) {
    options.inss_actor = *std::move(actor);
  } else if (!absl::GetFlag(FLAGS_inss_checkpoint).empty()) {
    return actor.status();
  }
  options.inss_fallback = absl::GetFlag(FLAGS_inss_fallback);
  const std::string intf = absl::GetFlag(FLAGS_interference);
  if (setup.emulated && intf != "none") {
    if (intf != "linear" && intf != "pairwise") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--interference must be linear, pairwise or none, not '", intf, "'"));
    }
    options.interference = setup.emulated->interference;
  } else if (setup.emulated) {
    options.interference = std::make_shared<NoInterference>();
  } else {
    auto model = V100Interference(*setup.v100, intf);
    if (!model.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--interference: ", model.status().message()));
    }
    options.interference = *std::move(model);
  }
  options.fits = std::make_shared<const ProfileFits>(
      ProfileFits::Build(snapshot.models, options.rules));
  return options;
}

void PrintSearch(const std::string& name, const SearchResult& r,
                 const ClusterSnapshot& snapshot,
                 const ClusterSimulator& simulator, const SimOptions& options) {
  std::printf(
      "%-13s SLO-preserved max throughput %8.1f req/s (scale %.3f of "
      "the base rates), violations %.2f%%, GPUs %d, share sum %.0f%%, "
      "planned for %.0f%% of it; policy called up to scale %.3f "
      "schedulable (%d runs)\n",
      name.c_str(), r.max_throughput_rps, r.best.scale,
      100 * r.best.sim.violation_fraction(), r.best.sim.gpus_used,
      r.best.sim.share_sum, 100 * r.best.planned_fraction,
      r.max_schedulable_scale, r.runs);
  std::printf("%-13s limit: %s; worst model's violations %.2f%%\n", "",
              r.limit == SearchResult::Limit::kRefused    ? "refused"
              : r.limit == SearchResult::Limit::kViolated ? "plan broke"
                                                          : "none",
              100 * r.best.sim.max_model_violation_fraction());
  if (!absl::GetFlag(FLAGS_efficiency)) return;
  double hold = 0;
  const double e =
      PlannerEfficiency(r, snapshot, simulator, options, 0.01, &hold);
  std::printf(
      "%-13s planner efficiency %.3f (the plan at the limit "
      "holds up to %.2fx its load)\n",
      "", e, hold);
}

void PrintPlan(const Plan& plan) {
  for (const DevicePlan& d : plan.devices()) {
    std::printf("  %s:", d.device_id().c_str());
    for (const GpuletPlan& g : d.gpulets()) {
      std::printf("  [%.0f%%", g.share_percent());
      for (const ModelAssignment& a : g.models()) {
        std::printf(" %s b%d d%.1fms %.0frps", a.model().c_str(),
                    a.batch_size(), a.duty_cycle_ms(), a.rate_rps());
      }
      std::printf("]");
    }
    std::printf("\n");
  }
}

void PrintRun(const std::string& name, const SimResult& r) {
  std::printf(
      "%-13s GPUs %d, share sum %.0f%%, goodput %.1f req/s, "
      "violations %.2f%%; %.1f%% of batches started beside a busy "
      "partition (mean slowdown there %.3f)\n",
      name.c_str(), r.gpus_used, r.share_sum, r.goodput_rps,
      100 * r.violation_fraction(),
      r.batches == 0 ? 0.0 : 100.0 * r.overlapped_batches / r.batches,
      r.overlapped_batches == 0
          ? 1.0
          : r.overlapped_factor_sum / r.overlapped_batches);
  for (const ModelResult& m : r.models) {
    std::printf(
        "    %-12s arrived %6lld  late %5lld  dropped %5lld  "
        "p50 %7.2f ms  p99 %7.2f ms  violations %.2f%%\n",
        m.model.c_str(), static_cast<long long>(m.arrived),
        static_cast<long long>(m.late), static_cast<long long>(m.dropped),
        m.p50_ms, m.p99_ms, 100 * m.violation_fraction());
  }
}

// Plans with each --policy and either searches its SLO-preserved maximum
// or simulates its plan for the workload (or the trace).
absl::Status Simulate() {
  ASSIGN_OR_RETURN(const Setup setup, LoadSetup());
  ASSIGN_OR_RETURN(std::vector<WorkloadModel> workload, WorkloadFromFlags());
  std::map<std::string, std::vector<double>> trace;
  if (!absl::GetFlag(FLAGS_trace).empty()) {
    RETURN_IF_ERROR(ReadTrace(absl::GetFlag(FLAGS_trace), &trace, &workload));
  }
  ASSIGN_OR_RETURN(const ClusterSnapshot snapshot, SnapshotOf(setup, workload));
  ASSIGN_OR_RETURN(
      const GroundTruth::CorunnerRule corunner_rule,
      GroundTruth::ParseCorunnerRule(absl::GetFlag(FLAGS_corunner_rule)));
  setup.truth()->set_corunner_rule(corunner_rule);
  const ClusterSimulator simulator(setup.truth(), Configs(snapshot));
  SimOptions options;
  options.duration = absl::Seconds(absl::GetFlag(FLAGS_duration_s));
  options.seed = absl::GetFlag(FLAGS_seed);
  options.min_requests = absl::GetFlag(FLAGS_min_requests);
  ASSIGN_OR_RETURN(const PolicyOptions policy_options,
                   PolicyOptionsFromFlags(setup, snapshot));
  for (absl::string_view view :
       absl::StrSplit(absl::GetFlag(FLAGS_policy), ',', absl::SkipEmpty())) {
    const std::string name(view);
    ASSIGN_OR_RETURN(std::unique_ptr<SchedulingPolicy> policy,
                     PolicyRegistry::Create(name, policy_options));
    if (absl::GetFlag(FLAGS_search)) {
      const SearchResult r =
          SearchMaxThroughput(*policy, snapshot, simulator, options, 0.01,
                              absl::GetFlag(FLAGS_overload));
      PrintSearch(name, r, snapshot, simulator, options);
      continue;
    }
    auto plan = policy->Schedule(snapshot);
    if (!plan.ok()) {
      std::printf("%-13s unschedulable: %s\n", name.c_str(),
                  std::string(plan.status().message()).c_str());
      continue;
    }
    if (absl::GetFlag(FLAGS_print_plan)) PrintPlan(*plan);
    SimResult r;
    if (trace.empty()) {
      std::map<std::string, double> rates;
      for (const auto& m : snapshot.models) rates[m.config.name()] = m.rate_rps;
      r = simulator.Run(*plan, rates, options);
    } else {
      r = simulator.RunTrace(*plan, trace, options);
    }
    PrintRun(name, r);
  }
  return absl::OkStatus();
}

// Errors in what the flags ask for print their message and exit 2.
int Run() {
  const absl::Status status = Simulate();
  if (status.ok()) return 0;
  std::fprintf(stderr, "%s\n",
               absl::IsInvalidArgument(status)
                   ? std::string(status.message()).c_str()
                   : status.ToString().c_str());
  return 2;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Tessera cluster simulator: runs scheduling policies against iGniter's "
      "V100 measurements (solo profiles and co-location latencies as ground "
      "truth) with the serving path's Dispatcher.\nExample: "
      "tessera_simulator --policy=gpulet,ideal-layout --rules=paper "
      "--slo_factor=10 --search --efficiency\n"
      "tessera_simulator --policy=sbp,gpulet --rate=200 --search\n"
      "Emulated cluster prediction: tessera_simulator --setup=emulated "
      "--rates=resnet50:100,vgg16:40 --policy=sbp,gpulet --search");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
