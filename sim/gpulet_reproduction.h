#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"
#include "sim/cluster_simulator.h"
#include "sim/emulated_workload.h"
#include "sim/reproduction_claim.h"
#include "sim/v100_workload.h"

namespace tessera {

// The gpulet paper's schedulability experiments (Figs. 16 and 17), on the
// V100 models, at the planner level as in the paper: which rate scenarios
// a policy calls schedulable on a fixed number of GPUs, and how far each
// scenario's rates scale before it refuses, against `ideal-layout` (the
// paper's ideal: its heuristic on every fixed partition layout).
//
// The setting follows the paper:
//  * SLO of each model = 2 x L(32, 100 %), the paper's rule (Table 3);
//  * per-model rates on a grid of `levels` levels {0, u, 2u, ...}, u =
//    `unit_fraction` x the model's batch-32 throughput on a whole GPU
//    (1000 x 32 / L(32, 100 %)): the paper's 0/100/200 req/s style,
//    scaled to each model's capacity;
//  * every scenario of the grid but the empty one is planned.
// Pure planning: no simulation (the paper's Figs. 16-17 count what its
// scheduler accepts).
class GpuletReproduction {
 public:
  struct Options {
    int gpus = 4;
    std::vector<std::string> models = {"alexnet", "resnet50", "vgg19", "ssd"};
    int levels = 4;
    double unit_fraction = 0.5;
    std::vector<std::string> policies = {"sbp", "greedy", "gpulet-noint",
                                         "gpulet", "ideal-layout"};
    // Bisection steps for each scenario's largest schedulable scale.
    int bisection_steps = 8;
    // Also simulate every plan at the scenario's rates (Poisson arrivals,
    // the V100 ground truth) and count the ones that hold: every model's
    // violations <= 1 % (MEASURES.md).
    bool simulate = false;
    SimOptions sim;
    // Run() and Snapshot() on the emulated set instead (`models` from its
    // names, its GPUs, each model's configured SLO: the gpulet artifact's
    // app SLOs). Must outlive this object.
    const EmulatedSetup* emulated = nullptr;
  };
  struct Scenario {
    std::vector<double> rates_rps;  // per model of Options::models
    // Per policy (Options::policies): planned at these rates, and the
    // largest scale of them it plans (0: none).
    std::vector<bool> schedulable;
    std::vector<double> max_scale;
    // With Options::simulate: planned and held in simulation.
    std::vector<bool> held;
  };
  struct PolicyResult {
    std::string policy;
    int schedulable = 0;
    int scenarios = 0;
    int held = 0;  // with Options::simulate
    // Fig. 17: the mean over scenarios of max_scale / ideal-layout's
    // (scenarios ideal-layout cannot plan at all are left out).
    double mean_scale_fraction = 0;
    // The most frequent reason for refusing a scenario ideal-layout
    // plans (numbers dropped), and how many such scenarios there are.
    std::string top_refusal;
    int refused_where_ideal_plans = 0;
  };
  struct Result {
    std::vector<Scenario> scenarios;
    std::vector<PolicyResult> policies;
  };
  // Fig. 13: the SLO-preserved max throughput (req/s, simulated) of each
  // V100 workload (workload_suite.h; the game-small variant left out)
  // per policy of kThroughputPolicies, at the paper's SLOs.
  struct ThroughputResult {
    std::vector<std::string> workloads;
    std::vector<std::vector<double>> max_rps;  // [workload][policy]
  };
  static const std::vector<std::string>& ThroughputPolicies();

  using Claim = ReproductionClaim;

  // `setup` must outlive this object.
  GpuletReproduction(const V100Setup* setup, Options options)
      : setup_(setup), options_(std::move(options)) {}

  // Plans every scenario with every policy under `base` (its rules and
  // interference model). Errors: an unknown policy or model, or no
  // "ideal-layout" among the policies.
  absl::StatusOr<Result> Run(const PolicyOptions& base) const;

  // The paper's schedulability claims (Figs. 16-17, and gpulet >= sbp)
  // with a verdict each: "holds" (within 5 % of the paper's number, or
  // better), "holds in direction" (gpulet ahead of sbp but short of the
  // paper's number) or "does not hold"; the reason quotes the measured
  // refusals.
  static std::vector<Claim> Verdicts(const Result& result);

  // The paper's game and traffic apps (../shared/data/glet/apps/, read at
  // run time: game = six lenets and resnet50 in parallel, SLO 95 ms each;
  // traffic = ssd-mobilenet then googlenet and vgg16, their own SLOs) on
  // `gpus` emulated GPUs (the 2080 Ti-like set of profiles/emulated, with
  // its own interference model in `base`): every model at the app's rate,
  // the SLO-preserved max app rate (req/s) per policy of
  // ThroughputPolicies(). Direction only: the emulated set's truth is a
  // fitted model.
  struct AppsResult {
    std::vector<std::string> apps;
    std::vector<std::vector<double>> max_app_rps;  // [app][policy]
    // What ended each search: "refused" or "broken" (planned, > 1 %).
    std::vector<std::vector<std::string>> limit;  // [app][policy]
  };
  absl::StatusOr<AppsResult> RunApps(const EmulatedSetup& emulated,
                                     const std::string& apps_dir,
                                     const PolicyOptions& base) const;
  static std::vector<Claim> AppsVerdicts(const AppsResult& result);
  void PrintApps(const AppsResult& result, const std::string& rules,
                 std::FILE* out) const;

  // Fig. 13 under `base`; every workload's models at the same base rate
  // (u of its slowest model), the search raising them together.
  absl::StatusOr<ThroughputResult> RunThroughput(
      const PolicyOptions& base) const;
  // gpulet's mean gain over sbp (+61.7 %), greedy (+81.2 %) and
  // gpulet-noint (+7.5 %), each with a verdict.
  static std::vector<Claim> ThroughputVerdicts(const ThroughputResult& result);
  void PrintThroughput(const ThroughputResult& result, const std::string& rules,
                       std::FILE* out) const;

  // Prints the per-policy table and the claims, headed by `rules` (what
  // the policies planned under).
  void Print(const Result& result, const std::string& rules,
             std::FILE* out) const;
  // One CSV row per scenario and policy: rules, the rates, schedulable,
  // max scale.
  void AppendCsv(const Result& result, const std::string& rules,
                 std::string* csv) const;

  // The snapshot of one scenario: the paper's SLOs, rates scaled.
  ClusterSnapshot Snapshot(const std::vector<double>& rates_rps,
                           double scale) const;
  // u per model (req/s).
  std::vector<double> Units() const;

 private:
  // A snapshot of `models` with the paper's SLOs (2 L(32, 100 %)), or on
  // the emulated set with its configured SLOs.
  ClusterSnapshot PaperSnapshot(const std::vector<WorkloadModel>& models) const;
  // The ground truth of the cluster Run() plans for.
  const GroundTruth& Truth() const;

  const V100Setup* setup_;
  Options options_;
};

}  // namespace tessera
