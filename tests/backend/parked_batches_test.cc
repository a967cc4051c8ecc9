#include "backend/parked_batches.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);

BatchRequest Batch(const std::string& gpulet, uint64_t id,
                   double budget_ms = 0) {
  BatchRequest b;
  b.set_gpulet_id(gpulet);
  b.set_batch_id(id);
  b.set_deadline_budget_ms(budget_ms);
  return b;
}

ParkedBatches::Reply Into(std::vector<BatchResponse>* out) {
  return [out](BatchResponse r) { out->push_back(std::move(r)); };
}

TEST(ParkedBatchesTest, HoldsUpToItsBoundPerGpuletAndGivesThemBackInOrder) {
  ParkedBatches parked({/*max_per_gpulet=*/2, absl::Seconds(10)});
  std::vector<BatchResponse> answers;
  for (uint64_t id : {1, 2}) {
    BatchRequest b = Batch("g", id);
    ParkedBatches::Reply r = Into(&answers);
    EXPECT_TRUE(parked.Park(b, r, kT0));
  }
  BatchRequest third = Batch("g", 3);
  ParkedBatches::Reply reply = Into(&answers);
  EXPECT_FALSE(parked.Park(third, reply, kT0));
  EXPECT_EQ(third.batch_id(), 3u);  // left to the caller, untouched
  ASSERT_TRUE(reply != nullptr);
  BatchRequest other = Batch("h", 4);
  EXPECT_TRUE(parked.Park(other, reply, kT0));  // another gpulet's bound
  EXPECT_EQ(parked.size(), 3);

  std::vector<ParkedBatches::Entry> g = parked.Take("g");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].batch.batch_id(), 1u);
  EXPECT_EQ(g[1].batch.batch_id(), 2u);
  EXPECT_TRUE(parked.Take("g").empty());
  EXPECT_EQ(parked.TakeAll().size(), 1u);
  EXPECT_EQ(parked.size(), 0);
  EXPECT_TRUE(answers.empty());  // nothing answered by holding or taking
}

TEST(ParkedBatchesTest, ADeadlineIsTheRequestBudgetCappedByTheLongestWait) {
  ParkedBatches parked({64, /*max_wait=*/absl::Seconds(1)});
  std::vector<BatchResponse> answers;
  for (auto [id, budget] :
       std::vector<std::pair<uint64_t, double>>{{1, 200}, {2, 0}, {3, 5000}}) {
    BatchRequest b = Batch("g", id, budget);
    ParkedBatches::Reply r = Into(&answers);
    ASSERT_TRUE(parked.Park(b, r, kT0));
  }
  EXPECT_TRUE(parked.TakeExpired(kT0 + absl::Milliseconds(199)).empty());
  std::vector<ParkedBatches::Entry> first =
      parked.TakeExpired(kT0 + absl::Milliseconds(200));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].batch.batch_id(), 1u);
  // No budget and a budget beyond the cap both wait max_wait.
  EXPECT_EQ(parked.TakeExpired(kT0 + absl::Milliseconds(999)).size(), 0u);
  EXPECT_EQ(parked.TakeExpired(kT0 + absl::Seconds(1)).size(), 2u);
  EXPECT_EQ(parked.size(), 0);
}

TEST(ParkedBatchesTest, AnswersCarryTheBatchIdAndTheCode) {
  ParkedBatches parked({64, absl::Seconds(10)});
  std::vector<BatchResponse> answers;
  for (uint64_t id : {7, 8}) {
    BatchRequest b = Batch("g", id);
    ParkedBatches::Reply r = Into(&answers);
    ASSERT_TRUE(parked.Park(b, r, kT0));
  }
  std::vector<ParkedBatches::Entry> all = parked.TakeAll();
  std::vector<ParkedBatches::Entry> one;
  one.push_back(std::move(all[1]));
  all.pop_back();
  ParkedBatches::AnswerExpired(std::move(all));
  ParkedBatches::AnswerUnavailable(std::move(one), "stopping");
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].batch_id(), 7u);
  EXPECT_EQ(answers[0].status().code(),
            static_cast<int>(absl::StatusCode::kDeadlineExceeded));
  EXPECT_EQ(answers[1].batch_id(), 8u);
  EXPECT_EQ(answers[1].status().code(),
            static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_EQ(answers[1].status().message(), "stopping");
}

TEST(ParkedBatchesTest, AClosedGpuletHoldsNothingUntilTheNextPlan) {
  ParkedBatches parked({64, absl::Seconds(10)});
  std::vector<BatchResponse> answers;
  BatchRequest first = Batch("g", 1);
  ParkedBatches::Reply reply = Into(&answers);
  ASSERT_TRUE(parked.Park(first, reply, kT0));
  std::vector<ParkedBatches::Entry> given_back = parked.Close("g");
  ASSERT_EQ(given_back.size(), 1u);
  EXPECT_TRUE(parked.closed("g"));
  BatchRequest second = Batch("g", 2);
  reply = Into(&answers);
  EXPECT_FALSE(parked.Park(second, reply, kT0));
  BatchRequest other = Batch("h", 3);
  EXPECT_TRUE(parked.Park(other, reply, kT0));
  // A new plan: everything held comes back, and "g" may be held for again.
  EXPECT_EQ(parked.ReopenAll().size(), 1u);
  EXPECT_FALSE(parked.closed("g"));
  reply = Into(&answers);
  EXPECT_TRUE(parked.Park(second, reply, kT0));
}

}  // namespace
}  // namespace tessera
