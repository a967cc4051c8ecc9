// How long the inss policy takes to plan with its actor: the shipped
// checkpoint (or --checkpoint) on the held-out workloads of 6 models on 4
// V100s, 9 on 4 and 9 on 8, with no plan in force (so every call runs the
// actor's forward pass, the repair and BDA; Case 2). Prints p50/p99/max of
// the whole Schedule call. Times, not
// assertions: a benchmark (target: 9 models x 8 GPUs below 10 ms).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "common/percentile.h"
#include "common/usage.h"
#include "scheduler/inss_environment.h"
#include "scheduler/inss_workload_sampler.h"
#include "scheduler/mlp_inss_actor.h"
#include "scheduler/planning_rules.h"
#include "scheduler/policy_registry.h"
#include "sim/inss_v100_setup.h"

ABSL_FLAG(std::string, v100_profile,
          "../shared/data/igniter-v100/profile.jsonl",
          "iGniter's public V100 measurements (profile.jsonl).");
ABSL_FLAG(std::string, checkpoint, "",
          "InSS actor checkpoint (empty: the shipped one).");
ABSL_FLAG(int, calls, 200, "Schedule calls timed per workload.");
ABSL_FLAG(double, slo_factor, 10, "SLO as a multiple of batch-1 latency.");
ABSL_FLAG(double, rate_rps, 50, "Rate of every model (req/s).");
ABSL_FLAG(std::string, rules_override, "",
          "PlanningRules text over the tessera preset, e.g. 'inss { "
          "actor_samples: 64 }'.");

namespace tessera {
namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

int Run() {
  auto setup = LoadV100Setup(absl::GetFlag(FLAGS_v100_profile),
                             Share100Rule::kBatch1Ratio, 0);
  if (!setup.ok()) {
    std::fprintf(stderr, "%s\n", setup.status().ToString().c_str());
    return 2;
  }
  PolicyOptions options;
  auto rules = RulesFromFlags("tessera", absl::GetFlag(FLAGS_rules_override));
  if (!rules.ok()) {
    std::fprintf(stderr, "%s\n", rules.status().ToString().c_str());
    return 2;
  }
  options.rules = *rules;
  options.interference = (*setup)->linear;
  auto actor = MlpInssActor::LoadOrShipped(absl::GetFlag(FLAGS_checkpoint));
  if (!actor.ok()) {
    std::fprintf(stderr, "%s\n", actor.status().ToString().c_str());
    return 2;
  }
  options.inss_actor = *std::move(actor);
  auto policy = PolicyRegistry::Create("inss", options);
  if (!policy.ok()) {
    std::fprintf(stderr, "%s\n", policy.status().ToString().c_str());
    return 2;
  }
  std::printf("%-40s %10s %10s %10s %12s\n", "workload", "p50 ms", "p99 ms",
              "max ms", "planned");
  for (const std::string& key : V100InssHeldOut()) {
    auto w = InssWorkloadSampler::ParseKey(key);
    if (!w.ok()) return 2;
    std::vector<WorkloadModel> models;
    std::map<std::string, int> seen;
    for (const std::string& m : w->models) {
      models.push_back(
          {absl::StrCat(m, "/", ++seen[m]), absl::GetFlag(FLAGS_rate_rps)});
    }
    const ClusterSnapshot snap = MakeV100Snapshot(
        **setup, w->gpus, models, absl::GetFlag(FLAGS_slo_factor));
    std::vector<double> ms;
    int planned = 0;
    for (int i = 0; i < absl::GetFlag(FLAGS_calls); ++i) {
      const auto start = std::chrono::steady_clock::now();
      planned += (*policy)->Schedule(snap).ok() ? 1 : 0;
      ms.push_back(MsSince(start));
    }
    std::printf("%-40s %10.3f %10.3f %10.3f %8d/%d\n", key.c_str(),
                Percentile(ms, 0.5), Percentile(ms, 0.99), Percentile(ms, 1),
                planned, absl::GetFlag(FLAGS_calls));
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Times the inss policy's planning (actor forward pass, repair, BDA) "
      "on the held-out V100 workloads. A benchmark: it asserts nothing.");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
