#include "backend/proxy_recovery.h"

#include <memory>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/backend/fake_proxy.h"

namespace tessera {
namespace {

using ::tessera::testing::FakeProxy;

BatchRequest Batch(const std::string& gpulet, uint64_t id) {
  BatchRequest b;
  b.set_gpulet_id(gpulet);
  b.set_batch_id(id);
  return b;
}

// A dead proxy serving the plan in force, as GpuletTable::Find reports it.
GpuletTable::Route DeadServing(const std::string& id) {
  auto proxy = std::make_shared<FakeProxy>(id);
  proxy->Stop(absl::ZeroDuration());
  return {proxy, /*stopped_for_swap=*/false, /*serving=*/true};
}

class ProxyRecoveryTest : public ::testing::Test {
 protected:
  ProxyRecovery::Options Opts() {
    ProxyRecovery::Options o;
    o.restart.initial_backoff = absl::Milliseconds(200);
    o.restart.max_restarts = 2;
    o.parking.max_per_gpulet = 4;
    o.parking.max_wait = absl::Seconds(1);
    return o;
  }
  // Holds batch `id` for gpulet `gpulet` (dead, serving); its answer goes
  // to answers_.
  bool HoldOne(ProxyRecovery& r, const std::string& gpulet, uint64_t id) {
    BatchRequest b = Batch(gpulet, id);
    ParkedBatches::Reply reply = [this](BatchResponse resp) {
      answers_.push_back(std::move(resp));
    };
    return r.Hold(DeadServing(gpulet), b, reply);
  }
  static absl::StatusCode Code(const BatchResponse& r) {
    return static_cast<absl::StatusCode>(r.status().code());
  }

  FakeClock clock_{absl::FromUnixSeconds(1000)};
  BackendMetrics metrics_;
  std::vector<BatchResponse> answers_;
};

TEST_F(ProxyRecoveryTest, HoldsOnlyForADeadProxyOfThePlanInForce) {
  ProxyRecovery recovery(Opts(), &clock_, &metrics_);
  EXPECT_TRUE(HoldOne(recovery, "g", 1));

  BatchRequest b = Batch("g", 2);
  ParkedBatches::Reply reply = [](BatchResponse) {};
  auto alive = std::make_shared<FakeProxy>("g");
  EXPECT_FALSE(recovery.Hold({alive, false, true}, b, reply));  // alive
  GpuletTable::Route retiring = DeadServing("g");
  retiring.serving = false;  // dropped by the plan: not restarted
  EXPECT_FALSE(recovery.Hold(retiring, b, reply));
  EXPECT_FALSE(recovery.Hold({nullptr, false, true}, b, reply));  // no proxy
  EXPECT_EQ(b.batch_id(), 2u);  // left to the caller
  EXPECT_EQ(recovery.held(), 1);

  ProxyRecovery::Options off = Opts();
  off.enabled = false;
  ProxyRecovery disabled(off, &clock_, &metrics_);
  EXPECT_FALSE(HoldOne(disabled, "g", 3));
  EXPECT_FALSE(disabled.WillRestart(DeadServing("g"), "g"));
}

TEST_F(ProxyRecoveryTest, RestartsWithinTheBudgetThenGivesUpAndAnswers) {
  ProxyRecovery recovery(Opts(), &clock_, &metrics_);
  ASSERT_TRUE(HoldOne(recovery, "g", 1));
  // First exit: restart at once; its batch comes back to be routed.
  EXPECT_EQ(recovery.Triage({"g"}), std::vector<std::string>{"g"});
  std::vector<ParkedBatches::Entry> back = recovery.Release({"g"});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].batch.batch_id(), 1u);
  // Second exit within the back-off: wait.
  clock_.Advance(absl::Milliseconds(100));
  EXPECT_TRUE(recovery.Triage({"g"}).empty());
  clock_.Advance(absl::Milliseconds(150));
  EXPECT_EQ(recovery.Triage({"g"}), std::vector<std::string>{"g"});
  // Third exit: two restarts within the window is the budget: give up,
  // answer what is held, hold nothing more.
  ASSERT_TRUE(HoldOne(recovery, "g", 2));
  clock_.Advance(absl::Seconds(1));
  EXPECT_TRUE(recovery.Triage({"g"}).empty());
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].batch_id(), 2u);
  EXPECT_EQ(Code(answers_[0]), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(recovery.WillRestart(DeadServing("g"), "g"));
  EXPECT_FALSE(HoldOne(recovery, "g", 3));
  EXPECT_NE(metrics_.Render().find(
                "tessera_backend_proxy_exits_total{gpulet=\"g\",outcome="
                "\"given_up\"} 1"),
            std::string::npos)
      << metrics_.Render();

  // A new plan: a fresh budget, and held again.
  EXPECT_TRUE(recovery.PlanApplied().empty());
  EXPECT_TRUE(HoldOne(recovery, "g", 4));
  EXPECT_EQ(recovery.Triage({"g"}), std::vector<std::string>{"g"});
}

TEST_F(ProxyRecoveryTest, AnswersExpiredBatchesAndStopsAnsweringTheRest) {
  ProxyRecovery recovery(Opts(), &clock_, &metrics_);
  ASSERT_TRUE(HoldOne(recovery, "g", 1));
  clock_.Advance(absl::Milliseconds(600));
  ASSERT_TRUE(HoldOne(recovery, "h", 2));
  clock_.Advance(absl::Milliseconds(500));  // g's batch waited 1.1 s
  recovery.Triage({});
  ASSERT_EQ(answers_.size(), 1u);
  EXPECT_EQ(answers_[0].batch_id(), 1u);
  EXPECT_EQ(Code(answers_[0]), absl::StatusCode::kDeadlineExceeded);

  recovery.Stop();
  ASSERT_EQ(answers_.size(), 2u);
  EXPECT_EQ(answers_[1].batch_id(), 2u);
  EXPECT_EQ(Code(answers_[1]), absl::StatusCode::kUnavailable);
  EXPECT_EQ(recovery.held(), 0);
}

}  // namespace
}  // namespace tessera
