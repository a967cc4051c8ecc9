#include "overlap/overlap_queues.h"

#include "gtest/gtest.h"
#include "tests/overlap/additive_predictor.h"

namespace tessera {
namespace {

// Two services: 10 operators at 1 ms and 4 operators at 2 ms.
const ServiceCatalog& Catalog() {
  static const ServiceCatalog* c =
      new ServiceCatalog({{"ten", 10, false}, {"four", 4, false}});
  return *c;
}

// No overlap: a group takes the sum of its ranges.
class AdditivePredictor : public testing::AdditivePredictor {
 public:
  AdditivePredictor() : testing::AdditivePredictor({1.0, 2.0}) {}
};

OverlapQuery Query(uint64_t id, int service, double arrival_ms, double qos) {
  OverlapQuery q;
  q.id = id;
  q.service = service;
  q.arrival_ms = arrival_ms;
  q.qos_ms = qos;
  q.batch = 1;
  return q;
}

TEST(OverlapQueuesTest, AbacusRunsThePipelinedGroupNextAndFinishesQueries) {
  AdditivePredictor predictor;
  OverlapQueues queues(Catalog(), predictor, OverlapQueuesOptions{});
  queues.Enqueue(Query(1, 0, 0, 12));
  queues.Enqueue(Query(2, 1, 0, 30));
  queues.Enqueue(Query(3, 0, 0, 100));
  // Headroom 12: query 1 whole (10 ms), then 2 ms = 1 of query 2's ops.
  GroupDecision d = queues.NextGroup(0);
  ASSERT_EQ(d.member_ids, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(d.group[1].end_op, 1);
  EXPECT_TRUE(queues.Launched(d, 0).empty());
  // Decided at launch: query 2 (headroom 30 − 12 running) runs on, with
  // query 3 now active for its service.
  EXPECT_TRUE(queues.has_pending_group());
  EXPECT_EQ(queues.Finished(), (std::vector<uint64_t>{1}));
  GroupDecision next = queues.NextGroup(12);
  ASSERT_FALSE(next.group.empty());
  EXPECT_EQ(next.member_ids[0], 2u);
  EXPECT_EQ(next.group[0].start_op, 1);
  EXPECT_EQ(queues.size(), 2u);
}

TEST(OverlapQueuesTest, ADropIsReportedOnceAndLeavesTheQueues) {
  AdditivePredictor predictor;
  OverlapQueues queues(Catalog(), predictor, OverlapQueuesOptions{});
  queues.Enqueue(Query(1, 0, 0, 50));
  GroupDecision d = queues.NextGroup(0);
  ASSERT_EQ(d.member_ids, (std::vector<uint64_t>{1}));
  // Arrives while query 1 runs, with less headroom than its 8 ms alone.
  queues.Enqueue(Query(2, 1, 0, 5));
  const std::vector<uint64_t> dropped = queues.Launched(d, 0);
  EXPECT_EQ(dropped, (std::vector<uint64_t>{2}));
  EXPECT_EQ(queues.Find(2), nullptr);
  EXPECT_EQ(queues.Finished(), (std::vector<uint64_t>{1}));
  const GroupDecision after = queues.NextGroup(10);
  EXPECT_TRUE(after.dropped.empty());
  EXPECT_TRUE(after.group.empty());
  EXPECT_EQ(queues.size(), 0u);
}

TEST(OverlapQueuesTest, BaselinesRunWholeQueriesAndTakeAllEmptiesThem) {
  AdditivePredictor predictor;
  OverlapQueuesOptions options;
  options.scheduler = OverlapScheduler::kSjf;
  OverlapQueues queues(Catalog(), predictor, options);
  queues.Enqueue(Query(1, 0, 0, 100));  // 10 ms alone
  queues.Enqueue(Query(2, 1, 1, 100));  // 8 ms alone
  const GroupDecision d = queues.NextGroup(2);
  ASSERT_EQ(d.member_ids, (std::vector<uint64_t>{2}));
  EXPECT_EQ(d.group[0].end_op, 4);
  EXPECT_TRUE(queues.Launched(d, 2).empty());
  EXPECT_FALSE(queues.has_pending_group());
  EXPECT_EQ(queues.TakeAll(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(queues.size(), 0u);
}

}  // namespace
}  // namespace tessera
