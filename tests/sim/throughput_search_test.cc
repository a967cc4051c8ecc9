// The throughput search on iGniter's V100 measurements (../shared/data,
// read at run time): every policy's plans must hold up to the load it
// refuses. With batch-1 queueing planned by the one-batch-ahead form these
// cases ended in a plan that broke 1 %: every policy but sbp on
// resnet50+vgg19 at 3x, and igniter on resnet50+ssd at 5x (checked by
// restoring that form).
#include "sim/throughput_search.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "scheduler/policy_registry.h"
#include "sim/v100_workload.h"

namespace tessera {
namespace {

const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";

struct Case {
  std::vector<std::string> models;
  double slo_factor;
};

TEST(ThroughputSearchV100Test, EveryPolicysLimitIsARefusalNotAViolation) {
  auto setup = LoadV100Setup(kProfile, Share100Rule::kBatch1Ratio, 0);
  ASSERT_TRUE(setup.ok()) << setup.status();
  SimOptions options;
  options.duration = absl::Seconds(20);
  options.min_requests = 2000;  // light loads long enough for a 1 % bound
  const std::vector<Case> cases = {{{"resnet50", "vgg19"}, 3},
                                   {{"resnet50", "ssd"}, 5}};
  for (const Case& c : cases) {
    std::vector<WorkloadModel> models;
    for (const std::string& m : c.models) models.push_back({m, 100});
    const ClusterSnapshot snapshot =
        MakeV100Snapshot(**setup, 4, models, c.slo_factor);
    const ClusterSimulator sim((*setup)->truth.get(), Configs(snapshot));
    for (const char* name :
         {"sbp", "greedy", "gpulet-noint", "gpulet", "igniter", "las"}) {
      PolicyOptions policy_options;
      policy_options.interference = (*setup)->linear;
      auto policy = PolicyRegistry::Create(name, policy_options);
      ASSERT_TRUE(policy.ok()) << policy.status();
      const SearchResult r =
          SearchMaxThroughput(**policy, snapshot, sim, options);
      const std::string where =
          absl::StrCat(name, " on ", c.models[0], "+", c.models[1], " at ",
                       c.slo_factor, "x");
      EXPECT_GT(r.max_throughput_rps, 0) << where;
      EXPECT_LE(r.best.sim.violation_fraction(), 0.01) << where;
      EXPECT_NE(r.limit, SearchResult::Limit::kViolated)
          << where << ": the load above " << r.max_throughput_rps
          << " req/s was planned and broke 1 %";
    }
  }
}

}  // namespace
}  // namespace tessera
