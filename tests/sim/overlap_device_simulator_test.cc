#include "sim/overlap_device_simulator.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "sim/abacus_reproduction.h"

namespace tessera {
namespace {

// Two services of 10 operators at 1 ms each.
const ServiceCatalog& Catalog() {
  static const ServiceCatalog* c =
      new ServiceCatalog({{"a", 10, false}, {"b", 10, false}});
  return *c;
}

// A device on which a group takes as long as its longest range: perfect
// overlap. The predictor knows it exactly.
double LongestRange(const OperatorGroup& g) {
  double ms = 0;
  for (const GroupMember& m : g)
    ms = std::max<double>(ms, m.end_op - m.start_op);
  return ms;
}
class ExactPredictor : public GroupLatencyPredictor {
 public:
  std::vector<double> PredictMs(
      const std::vector<OperatorGroup>& groups) const override {
    std::vector<double> out;
    for (const OperatorGroup& g : groups) out.push_back(LongestRange(g));
    return out;
  }
};

OverlapWorkload Workload(double load_qps, double qos_ms) {
  OverlapWorkload w;
  w.services = {0, 1};
  w.qos_ms = qos_ms;
  w.load_qps = load_qps;
  w.queries = 600;
  w.seed = 5;
  return w;
}

OverlapRunResult Simulate(OverlapScheduler s, const OverlapWorkload& w,
                          bool trace = false) {
  OverlapSimOptions o;
  o.scheduler = s;
  o.keep_trace = trace;
  ExactPredictor predictor;
  return SimulateOverlapDevice(w, o, Catalog(), predictor, LongestRange);
}

TEST(OverlapDeviceSimulatorTest, EveryQueryIsAnsweredOrDropped) {
  for (OverlapScheduler s : {OverlapScheduler::kAbacus, OverlapScheduler::kFcfs,
                             OverlapScheduler::kSjf, OverlapScheduler::kEdf}) {
    const OverlapRunResult r = Simulate(s, Workload(160, 40), true);
    EXPECT_EQ(r.served + r.dropped, r.queries) << OverlapSchedulerName(s);
    EXPECT_LE(r.in_qos, r.served);
    // One group at a time: rounds never overlap.
    for (size_t i = 1; i < r.trace.size(); ++i) {
      EXPECT_GE(r.trace[i].start_ms, r.trace[i - 1].end_ms - 1e-9);
    }
  }
}

TEST(OverlapDeviceSimulatorTest, LightLoadMeetsEveryTarget) {
  const OverlapRunResult r =
      Simulate(OverlapScheduler::kAbacus, Workload(20, 40));
  EXPECT_EQ(r.in_qos, r.queries);
  EXPECT_EQ(r.dropped, 0);
  // Every query alone takes 10 ms; a few wait behind another.
  EXPECT_GE(r.p99_ms, 10);
  EXPECT_LT(r.p99_ms, 40);
}

TEST(OverlapDeviceSimulatorTest, OverlapServesWhatOneAtATimeCannot) {
  // 160 QPS of 10 ms queries: 1.6x what one at a time can serve; two
  // overlapped take 10 ms together.
  const OverlapRunResult abacus =
      Simulate(OverlapScheduler::kAbacus, Workload(160, 40));
  const OverlapRunResult fcfs =
      Simulate(OverlapScheduler::kFcfs, Workload(160, 40));
  EXPECT_GT(abacus.GoodputQps(), 1.3 * fcfs.GoodputQps());
  EXPECT_LT(abacus.ViolationRatio(), fcfs.ViolationRatio());
  // One at a time cannot exceed 100 QPS.
  EXPECT_LE(fcfs.GoodputQps(), 101);
}

TEST(OverlapDeviceSimulatorTest, TheSameSeedGivesTheSameRun) {
  const OverlapRunResult a =
      Simulate(OverlapScheduler::kAbacus, Workload(120, 30));
  const OverlapRunResult b =
      Simulate(OverlapScheduler::kAbacus, Workload(120, 30));
  EXPECT_EQ(a.in_qos, b.in_qos);
  EXPECT_EQ(a.rounds, b.rounds);
  EXPECT_DOUBLE_EQ(a.p99_ms, b.p99_ms);
}

// The reproduction end to end on two pairs, with a small profile.
TEST(AbacusReproductionTest, SmokeRunsEveryScheduler) {
  AbacusReproduction::Options o;
  o.data_dir = TESSERA_SHARED_DIR "/data/abacus-a100";
  o.profile_groups = 100;
  o.profile_runs = 5;
  o.train_epochs = 20;
  o.queries = 100;
  o.classes = {"pairs"};
  o.max_sets_per_class = 2;
  o.peak_loads = {1.0};
  auto result = AbacusReproduction(o).Run();
  ASSERT_TRUE(result.ok()) << result.status();
  // 2 sets x 2 loads x 4 schedulers; 3 claims per baseline.
  EXPECT_EQ(result->rows.size(), 16u);
  EXPECT_EQ(result->claims.size(), 9u);
  // Two predictors: sizes 1-2 and 1-4.
  EXPECT_EQ(result->predictor.size(), 6u);
  EXPECT_FALSE(result->trace.empty());  // resnet50+resnet152 is the 2nd pair
  for (const auto& row : result->rows) {
    EXPECT_EQ(row.run.served + row.run.dropped, row.run.queries) << row.set;
  }
}

}  // namespace
}  // namespace tessera
