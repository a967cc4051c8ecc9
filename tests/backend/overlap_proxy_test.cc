#include "backend/overlap_proxy.h"

#include <deque>

#include "absl/synchronization/mutex.h"
#include "common/status_proto.h"
#include "gtest/gtest.h"
#include "tests/overlap/additive_predictor.h"

namespace tessera {
namespace {

// No overlap: a group takes the sum of its ranges; "ten" has 10 operators
// of 1 ms, "four" 4 of 2 ms.
class AdditivePredictor : public testing::AdditivePredictor {
 public:
  AdditivePredictor() : testing::AdditivePredictor({1.0, 2.0}) {}
};

struct RecordedMember {
  std::string model;
  int start_op;
  int end_op;
  bool operator==(const RecordedMember& o) const {
    return model == o.model && start_op == o.start_op && end_op == o.end_op;
  }
};

// Records each group and holds it until the test completes it.
class GroupFakeProxy final : public Proxy {
 public:
  void Execute(BatchRequest, DoneCallback) override {
    ADD_FAILURE() << "an operator-group gpulet sends only groups";
  }
  void ExecuteGroup(std::vector<GroupMemberRequest> members,
                    GroupDoneCallback done) override {
    absl::MutexLock lock(&mu_);
    std::vector<RecordedMember> group;
    GroupResponse response;
    for (const GroupMemberRequest& m : members) {
      group.push_back({m.query->model(), m.start_op, m.end_op});
      if (m.last) {
        BatchResponse& out = response.finished[m.query_id];
        Tensor* t = out.add_outputs();
        t->set_name("OUTPUT__0");
        t->add_shape(m.query->inputs(0).shape(0));
      }
    }
    groups_.push_back(group);
    held_.push_back([done, response]() mutable { done(std::move(response)); });
  }
  // Waits until `n` groups were sent; false after `timeout`.
  bool WaitForGroups(size_t n, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return groups_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  void CompleteOldest() {
    std::function<void()> done;
    {
      absl::MutexLock lock(&mu_);
      ASSERT_FALSE(held_.empty());
      done = std::move(held_.front());
      held_.pop_front();
    }
    done();
  }
  std::vector<std::vector<RecordedMember>> groups() const {
    absl::MutexLock lock(&mu_);
    return groups_;
  }
  bool Drain(absl::Duration) override { return true; }
  void Stop(absl::Duration) override {
    std::deque<std::function<void()>> held;
    {
      absl::MutexLock lock(&mu_);
      held.swap(held_);
    }
    for (auto& h : held) h();
  }
  bool alive() const override { return true; }
  pid_t pid() const override { return 1; }
  const ProxyConfig& config() const override { return config_; }
  const std::vector<MeasuredLatency>& warmup() const override {
    return warmup_;
  }
  void SetInterferenceFactors(std::map<std::string, double>) override {}

 private:
  ProxyConfig config_;
  std::vector<MeasuredLatency> warmup_;
  mutable absl::Mutex mu_;
  std::vector<std::vector<RecordedMember>> groups_ ABSL_GUARDED_BY(mu_);
  std::deque<std::function<void()>> held_ ABSL_GUARDED_BY(mu_);
};

ModelConfig Model(const std::string& name, int segments) {
  ModelConfig m;
  m.set_name(name);
  m.set_max_batch_size(4);
  m.set_slo_ms(1000);
  m.set_segment_count(segments);
  return m;
}

BatchRequest Query(uint64_t batch_id, const std::string& model,
                   double budget_ms) {
  BatchRequest b;
  b.set_batch_id(batch_id);
  b.set_model(model);
  b.set_deadline_budget_ms(budget_ms);
  Tensor* t = b.add_inputs();
  t->set_name("INPUT__0");
  t->add_shape(2);
  return b;
}

class OverlapProxyTest : public ::testing::Test {
 protected:
  std::unique_ptr<OverlapProxy> Start(OverlapScheduler scheduler,
                                      bool pipeline = true) {
    inner_ = std::make_shared<GroupFakeProxy>();
    OverlapProxy::Options options;
    options.queues.scheduler = scheduler;
    options.queues.pipeline = pipeline;
    options.models = {Model("ten", 10), Model("four", 4)};
    auto proxy = OverlapProxy::Create(
        inner_,
        std::make_unique<ServiceCatalog>(std::vector<OverlapService>{
            {"ten", 10, false}, {"four", 4, false}}),
        std::make_unique<AdditivePredictor>(), options, &clock_);
    EXPECT_TRUE(proxy.ok()) << proxy.status();
    return std::move(*proxy);
  }
  void Send(OverlapProxy* proxy, uint64_t id, const std::string& model,
            double budget_ms) {
    proxy->Execute(Query(id, model, budget_ms), [this](BatchResponse r) {
      absl::MutexLock lock(&mu_);
      answers_[r.batch_id()] = r;
    });
  }
  bool WaitForAnswers(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return answers_.size() >= n;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  absl::StatusCode Code(uint64_t id) {
    absl::MutexLock lock(&mu_);
    return FromStatusProto(answers_.at(id).status()).code();
  }

  FakeClock clock_;
  std::shared_ptr<GroupFakeProxy> inner_;
  absl::Mutex mu_;
  std::map<uint64_t, BatchResponse> answers_ ABSL_GUARDED_BY(mu_);
};

TEST_F(OverlapProxyTest, RunsTheGroupsAHandComputationGivesAndDropsAMiss) {
  // Decisions when the device frees up (with pipelining they would race
  // the test's sends against the running group's launch).
  auto proxy = Start(OverlapScheduler::kAbacus, /*pipeline=*/false);
  Send(proxy.get(), 100, "four", 1000);  // runs alone: the device is free
  ASSERT_TRUE(inner_->WaitForGroups(1, absl::Seconds(10)));
  Send(proxy.get(), 101, "ten", 12);
  Send(proxy.get(), 102, "four", 30);
  Send(proxy.get(), 103, "ten", 5);  // 10 ms alone: cannot make 5
  inner_->CompleteOldest();
  // Least headroom first: query 101 whole (10 ms), then 2 ms of query 102
  // (one 2 ms operator) fit its 12 ms.
  ASSERT_TRUE(inner_->WaitForGroups(2, absl::Seconds(10)));
  inner_->CompleteOldest();
  ASSERT_TRUE(inner_->WaitForGroups(3, absl::Seconds(10)));
  inner_->CompleteOldest();
  ASSERT_TRUE(WaitForAnswers(4));
  const std::vector<std::vector<RecordedMember>> expected = {
      {{"four", 0, 4}},
      {{"ten", 0, 10}, {"four", 0, 1}},
      {{"four", 1, 4}},
  };
  EXPECT_EQ(inner_->groups(), expected);
  EXPECT_EQ(Code(100), absl::StatusCode::kOk);
  EXPECT_EQ(Code(101), absl::StatusCode::kOk);
  EXPECT_EQ(Code(102), absl::StatusCode::kOk);
  EXPECT_EQ(Code(103), absl::StatusCode::kDeadlineExceeded);
  {
    absl::MutexLock lock(&mu_);
    ASSERT_EQ(answers_[101].outputs_size(), 1);
    EXPECT_EQ(answers_[101].outputs(0).shape(0), 2);
  }
  const OverlapProxy::Counters c = proxy->counters();
  EXPECT_EQ(c.queries, 4);
  EXPECT_EQ(c.answered, 3);
  EXPECT_EQ(c.dropped, 1);
  EXPECT_EQ(c.groups, 3);
}

TEST_F(OverlapProxyTest, BaselinesRunWholeQueriesOneAtATime) {
  auto proxy = Start(OverlapScheduler::kFcfs);
  Send(proxy.get(), 1, "ten", 1000);
  ASSERT_TRUE(inner_->WaitForGroups(1, absl::Seconds(10)));
  Send(proxy.get(), 2, "four", 1000);
  inner_->CompleteOldest();
  ASSERT_TRUE(inner_->WaitForGroups(2, absl::Seconds(10)));
  inner_->CompleteOldest();
  ASSERT_TRUE(WaitForAnswers(2));
  const std::vector<std::vector<RecordedMember>> expected = {{{"ten", 0, 10}},
                                                             {{"four", 0, 4}}};
  EXPECT_EQ(inner_->groups(), expected);
}

TEST_F(OverlapProxyTest, RefusesWhatItCannotQueueAndAnswersEveryQueryAtStop) {
  auto proxy = Start(OverlapScheduler::kAbacus);
  Send(proxy.get(), 1, "nine", 1000);
  BatchRequest empty = Query(2, "ten", 1000);
  empty.clear_inputs();
  proxy->Execute(empty, [this](BatchResponse r) {
    absl::MutexLock lock(&mu_);
    answers_[r.batch_id()] = r;
  });
  ASSERT_TRUE(WaitForAnswers(2));
  EXPECT_EQ(Code(1), absl::StatusCode::kNotFound);
  EXPECT_EQ(Code(2), absl::StatusCode::kInvalidArgument);
  Send(proxy.get(), 3, "ten", 1000);
  ASSERT_TRUE(inner_->WaitForGroups(1, absl::Seconds(10)));
  Send(proxy.get(), 4, "ten", 1000);  // queued behind query 3
  proxy->Stop();
  ASSERT_TRUE(WaitForAnswers(4));
  EXPECT_EQ(Code(3), absl::StatusCode::kOk);
  EXPECT_EQ(Code(4), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera
