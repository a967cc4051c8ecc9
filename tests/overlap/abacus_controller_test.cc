#include "overlap/abacus_controller.h"

#include <limits>

#include "gtest/gtest.h"
#include "overlap/sequential_controller.h"
#include "tests/overlap/additive_predictor.h"

namespace tessera {
namespace {

// Three services: 10 ops at 1 ms, 5 ops at 1 ms, 20 ops at 5 ms.
const ServiceCatalog& Catalog() {
  static const ServiceCatalog* c = new ServiceCatalog(
      {{"ten", 10, false}, {"five", 5, false}, {"slow", 20, false}});
  return *c;
}

// No overlap: a group takes the sum of its ranges.
class AdditivePredictor : public testing::AdditivePredictor {
 public:
  AdditivePredictor() : testing::AdditivePredictor({1.0, 1.0, 5.0}) {}
};

OverlapQuery Query(uint64_t id, int service, double arrival_ms) {
  OverlapQuery q;
  q.id = id;
  q.service = service;
  q.arrival_ms = arrival_ms;
  q.qos_ms = 50;
  q.batch = 4;
  return q;
}

// The paper's Fig. 12: headrooms 45, 35 and 25 ms at now = 100.
std::vector<OverlapQuery> Figure12() {
  return {Query(1, 2, 95), Query(2, 1, 85), Query(3, 0, 75)};
}

TEST(AbacusControllerTest, GuaranteesTheLeastHeadroomAndFillsTheRest) {
  AdditivePredictor predictor;
  AbacusController controller(Catalog(), predictor, AbacusOptions{});
  const GroupDecision d = controller.Decide(Figure12(), 100, 0);
  // Budget 25: q3 whole (10), q2 whole (5), then 10 ms = 2 of q1's 5 ms ops.
  ASSERT_EQ(d.member_ids, (std::vector<uint64_t>{3, 2, 1}));
  EXPECT_EQ(d.group[0].end_op, 10);
  EXPECT_EQ(d.group[1].end_op, 5);
  EXPECT_EQ(d.group[2].start_op, 0);
  EXPECT_EQ(d.group[2].end_op, 2);
  EXPECT_DOUBLE_EQ(d.predicted_ms, 25);
  EXPECT_TRUE(d.dropped.empty());
  // One prefix call, then the 2-way search: cuts {6, 13}, {2, 4}; at 2 the
  // budget is spent (below the 5 ms early stop).
  EXPECT_EQ(d.predictor_calls, 3);
  EXPECT_EQ(d.predictions, 3 + 2 + 2);
}

TEST(AbacusControllerTest, TheRunningGroupShrinksTheBudget) {
  AdditivePredictor predictor;
  AbacusController controller(Catalog(), predictor, AbacusOptions{});
  // Eq. 3: 10 ms still running leaves 15: q3 and q2 whole, none of q1.
  const GroupDecision d = controller.Decide(Figure12(), 100, 10);
  EXPECT_EQ(d.member_ids, (std::vector<uint64_t>{3, 2}));
  EXPECT_DOUBLE_EQ(d.predicted_ms, 15);
}

TEST(AbacusControllerTest, ContinuesAPartlyRunQueryFromItsNextOperator) {
  AdditivePredictor predictor;
  AbacusController controller(Catalog(), predictor, AbacusOptions{});
  std::vector<OverlapQuery> active = Figure12();
  active[2].next_op = 4;  // q3 has 6 ops (6 ms) left
  const GroupDecision d = controller.Decide(active, 100, 0);
  // 25 − 6 − 5 = 14 ms: 2 ops of q1 (10 ms); a third would be 15.
  ASSERT_EQ(d.member_ids, (std::vector<uint64_t>{3, 2, 1}));
  EXPECT_EQ(d.group[0].start_op, 4);
  EXPECT_EQ(d.group[2].end_op, 2);
  EXPECT_DOUBLE_EQ(d.predicted_ms, 21);
}

TEST(AbacusControllerTest, DropsAQueryThatCannotFinishAndGuaranteesTheNext) {
  AdditivePredictor predictor;
  AbacusController controller(Catalog(), predictor, AbacusOptions{});
  std::vector<OverlapQuery> active = Figure12();
  active[2].arrival_ms = 58;          // q3: headroom 8 < its 10 ms
  active.push_back(Query(4, 0, 40));  // headroom −10: already late
  const GroupDecision d = controller.Decide(active, 100, 0);
  EXPECT_EQ(d.dropped, (std::vector<uint64_t>{4, 3}));
  // q2 guaranteed with 35 ms: q2 (5) + 6 ops of q1 (30).
  ASSERT_EQ(d.member_ids, (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(d.group[1].end_op, 6);
  EXPECT_DOUBLE_EQ(d.predicted_ms, 35);
}

TEST(AbacusControllerTest, WithoutDropsALateQueryStillRunsAlone) {
  AdditivePredictor predictor;
  AbacusOptions options;
  options.drop = false;
  AbacusController controller(Catalog(), predictor, options);
  std::vector<OverlapQuery> active = {Query(4, 0, 40)};
  const GroupDecision d = controller.Decide(active, 100, 0);
  EXPECT_TRUE(d.dropped.empty());
  EXPECT_EQ(d.member_ids, (std::vector<uint64_t>{4}));
}

// A diverged predictor: NaN for any group with a partial range.
class NanForPartialRanges : public GroupLatencyPredictor {
 public:
  std::vector<double> PredictMs(
      const std::vector<OperatorGroup>& groups) const override {
    std::vector<double> out = additive_.PredictMs(groups);
    for (size_t i = 0; i < groups.size(); ++i) {
      for (const GroupMember& m : groups[i]) {
        if (m.end_op < Catalog().service(m.service).operators) {
          out[i] = std::numeric_limits<double>::quiet_NaN();
        }
      }
    }
    return out;
  }

 private:
  AdditivePredictor additive_;
};

TEST(AbacusControllerTest, ANanPredictionFitsNothingAndTheSearchEnds) {
  NanForPartialRanges predictor;
  AbacusController controller(Catalog(), predictor, AbacusOptions{});
  // Whole q3 and q2 fit (15 ms); every cut of q1 predicts NaN.
  const GroupDecision d = controller.Decide(Figure12(), 100, 0);
  EXPECT_EQ(d.member_ids, (std::vector<uint64_t>{3, 2}));
  EXPECT_DOUBLE_EQ(d.predicted_ms, 15);
}

TEST(AbacusControllerTest, NothingActiveIsAnEmptyDecision) {
  AdditivePredictor predictor;
  AbacusController controller(Catalog(), predictor, AbacusOptions{});
  const GroupDecision d = controller.Decide({}, 100, 0);
  EXPECT_TRUE(d.group.empty());
  EXPECT_EQ(predictor.calls, 0);
}

TEST(SequentialControllerTest, OrdersByArrivalDeadlineOrPredictedLength) {
  AdditivePredictor predictor;
  std::vector<OverlapQuery> queued = {Query(1, 2, 90), Query(2, 1, 95),
                                      Query(3, 0, 40)};
  queued[1].qos_ms = 10;  // deadline 105, the earliest
  const GroupDecision fcfs =
      SequentialController(Catalog(), predictor, SequentialOrder::kFcfs)
          .Decide(queued, 100);
  // Nexus's drop: query 3 is past its target (deadline 90).
  EXPECT_EQ(fcfs.dropped, (std::vector<uint64_t>{3}));
  EXPECT_EQ(fcfs.member_ids, (std::vector<uint64_t>{1}));
  EXPECT_EQ(fcfs.group[0].end_op, 20);
  EXPECT_EQ(SequentialController(Catalog(), predictor, SequentialOrder::kEdf)
                .Decide(queued, 100)
                .member_ids,
            (std::vector<uint64_t>{2}));
  // SJF: q2 takes 5 ms, q1 100 ms.
  const GroupDecision sjf =
      SequentialController(Catalog(), predictor, SequentialOrder::kSjf)
          .Decide(queued, 100);
  EXPECT_EQ(sjf.member_ids, (std::vector<uint64_t>{2}));
  EXPECT_DOUBLE_EQ(sjf.predicted_ms, 5);
}

}  // namespace
}  // namespace tessera
