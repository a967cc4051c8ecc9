// How long the Abacus controller takes to pick a group: Tessera's predictor
// is learned on the emulated A100 (profiled groups of the quadruplet's
// services), then Decide runs on random in-flight sets of 2, 3 and 4
// queries (random progress and headrooms) on one thread. Prints the
// decision time's p50/p99/max and the predictions per decision. The paper:
// 0.066-0.088 ms per search, 0.26 ms with 4-way search. Times, not
// assertions: a benchmark (target: p99 below 0.3 ms at 4 services).
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "common/percentile.h"
#include "common/usage.h"
#include "overlap/a100_ground_truth.h"
#include "overlap/abacus_controller.h"
#include "overlap/group_sampler.h"
#include "overlap/predictor_training.h"

ABSL_FLAG(std::string, data_dir, "../shared/data/abacus-a100",
          "The authors' A100 group predictors (the emulated device).");
ABSL_FLAG(int, decisions, 20000, "Decisions timed per number of services.");
ABSL_FLAG(int, profile_groups, 1000,
          "Groups profiled per group size to learn the predictor.");
ABSL_FLAG(int, ways, 2, "Cut points per prediction call (paper: 4).");

namespace tessera {
namespace {

int Run() {
  const ServiceCatalog& catalog = ServiceCatalog::A100();
  auto truth = A100GroundTruth::Create(absl::GetFlag(FLAGS_data_dir), 4);
  if (!truth.ok()) {
    std::fprintf(stderr, "%s\n", truth.status().ToString().c_str());
    return 2;
  }
  const std::vector<int> set = {1, 2, 5, 6};
  std::mt19937_64 rng(1);
  auto samples = ProfileGroups(
      catalog, set, 4, absl::GetFlag(FLAGS_profile_groups), 10,
      GroupSamplerOptions{},
      [&](const OperatorGroup& g) { return (*truth)->SampleMs(g, rng); }, rng);
  MlpTrainerOptions train;
  train.epochs = 100;
  auto proto = TrainGroupPredictor(catalog, "emulated-a100", samples, train,
                                   /*errors=*/nullptr);
  if (!proto.ok()) {
    std::fprintf(stderr, "%s\n", proto.status().ToString().c_str());
    return 1;
  }
  auto predictor = LearnedGroupPredictor::Create(catalog, *proto);
  if (!predictor.ok()) {
    std::fprintf(stderr, "%s\n", predictor.status().ToString().c_str());
    return 1;
  }
  AbacusOptions options;
  options.ways = absl::GetFlag(FLAGS_ways);
  const AbacusController controller(catalog, *predictor, options);

  std::printf(
      "| services | decisions | p50 us | p99 us | max us | "
      "predictions/decision |\n|---|---|---|---|---|---|\n");
  std::uniform_real_distribution<double> headroom(5, 150);
  for (int n = 2; n <= 4; ++n) {
    std::vector<double> us;
    double predictions = 0;
    for (int i = 0; i < absl::GetFlag(FLAGS_decisions); ++i) {
      std::vector<OverlapQuery> active;
      for (int k = 0; k < n; ++k) {
        OverlapQuery q;
        q.id = k;
        q.service = set[k];
        q.batch = 4;
        q.seqlen = catalog.service(q.service).sequence_input ? 32 : 0;
        q.next_op = std::uniform_int_distribution<int>(
            0, catalog.service(q.service).operators - 1)(rng);
        q.qos_ms = headroom(rng);
        active.push_back(q);
      }
      const auto start = std::chrono::steady_clock::now();
      const GroupDecision d = controller.Decide(active, 0, 0);
      us.push_back(std::chrono::duration<double, std::micro>(
                       std::chrono::steady_clock::now() - start)
                       .count());
      predictions += d.predictions;
    }
    std::printf("| %d | %zu | %.1f | %.1f | %.1f | %.1f |\n", n, us.size(),
                Percentile(us, 0.5), Percentile(us, 0.99), Percentile(us, 1.0),
                predictions / us.size());
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Times the Abacus controller's group decision with a predictor "
      "learned on the emulated A100; prints p50/p99/max per number of "
      "co-located services.");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
