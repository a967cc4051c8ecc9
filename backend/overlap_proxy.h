#pragma once

// A gpulet under operator-group scheduling (Abacus, or its sequential
// baselines): the node-local controller in front of one proxy that runs
// the whole device. Each batch the frontend sends is one query; queries
// wait in the controller's queues (OverlapQueues, the simulator's own), and
// each round the controller launches one group of operator ranges on the
// proxy, chosen with the learned group-latency predictor. A query predicted
// to miss its target is answered DEADLINE_EXCEEDED; every other query is
// answered when its last range ends. One controller thread per gpulet,
// owned and joined. Thread-safe.
//
// One proxy per device, with a stream per query, rather than the paper's
// process per service under MPS: a group is one command and one completion,
// and a query's intermediate stays in the one address space that runs its
// next range (no cross-process barrier per round).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "backend/proxy.h"
#include "common/clock.h"
#include "overlap/group_predictor.h"
#include "overlap/overlap_queues.h"
#include "overlap/service_catalog.h"

namespace tessera {

class OverlapProxy final : public Proxy {
 public:
  struct Options {
    OverlapQueuesOptions queues;
    // The device's time scale k: predictions (device milliseconds) are
    // multiplied by it to compare with wall-clock headroom.
    double time_scale = 1;
    // The gpulet's models (segment_count > 0 each).
    std::vector<ModelConfig> models;
    // Called after each group is launched, on the controller thread, with
    // the group's size and the decision's time (µs): for metrics.
    std::function<void(int size, double decision_us)> on_group;
  };
  struct Counters {
    int64_t queries = 0;
    int64_t answered = 0;
    int64_t dropped = 0;
    int64_t groups = 0;
  };

  // `predictor_proto` names the services its features encode, in order;
  // each of the gpulet's models must be one of them. Starts the controller
  // thread. `clock` must outlive the proxy.
  static absl::StatusOr<std::unique_ptr<OverlapProxy>> Create(
      std::shared_ptr<Proxy> inner, const GroupPredictorProto& predictor_proto,
      Options options, const Clock* clock);
  // The same with a catalog and predictor of the caller's (tests).
  static absl::StatusOr<std::unique_ptr<OverlapProxy>> Create(
      std::shared_ptr<Proxy> inner, std::unique_ptr<ServiceCatalog> catalog,
      std::unique_ptr<GroupLatencyPredictor> predictor, Options options,
      const Clock* clock);
  ~OverlapProxy() override;

  // Queues `batch` as one query (its inputs' leading dimension is the
  // query's batch). Answers at once INVALID_ARGUMENT or NOT_FOUND for a
  // query the controller cannot take.
  void Execute(BatchRequest batch, DoneCallback done) override
      ABSL_LOCKS_EXCLUDED(mu_);
  bool Drain(absl::Duration timeout) override ABSL_LOCKS_EXCLUDED(mu_);
  // Stops the controller (queued queries: UNAVAILABLE), then the proxy.
  void Stop(absl::Duration grace = absl::Seconds(5)) override
      ABSL_LOCKS_EXCLUDED(mu_);
  bool alive() const override { return inner_->alive(); }
  pid_t pid() const override { return inner_->pid(); }
  const ProxyConfig& config() const override { return inner_->config(); }
  const std::vector<MeasuredLatency>& warmup() const override {
    return inner_->warmup();
  }
  void SetInterferenceFactors(std::map<std::string, double>) override {}

  Counters counters() const ABSL_LOCKS_EXCLUDED(mu_);
  const ServiceCatalog& catalog() const { return *catalog_; }

 private:
  struct Query {
    BatchRequest batch;
    DoneCallback done;
    absl::Time received;
  };
  // Callbacks to run once the lock is released.
  using Answers = std::vector<std::pair<DoneCallback, BatchResponse>>;
  OverlapProxy(std::shared_ptr<Proxy> inner,
               std::unique_ptr<ServiceCatalog> catalog,
               std::unique_ptr<GroupLatencyPredictor> predictor,
               Options options, const Clock* clock);
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs one round: decides, launches, waits for the group, answers.
  // False when there was nothing to run.
  bool RunRound() ABSL_LOCKS_EXCLUDED(mu_);
  // The round's group (empty: none) and its members' requests; drops go
  // to `answers`.
  GroupDecision DecideRound(std::vector<GroupMemberRequest>* members,
                            double* decision_us, Answers* answers)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The group is on the proxy: members advance, and with pipelining the
  // next group is decided now.
  void Launched(const GroupDecision& d, Answers* answers)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The group ended: answers the queries it finished (or, if it failed,
  // every member's query).
  void FinishRound(const GroupDecision& d, GroupResponse result,
                   Answers* answers) ABSL_LOCKS_EXCLUDED(mu_);
  double NowMs() const;
  // Removes `ids` and queues their answer `status` (no outputs).
  void Answer(const std::vector<uint64_t>& ids, const absl::Status& status,
              Answers* answers) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The decision's time since `start` (µs).
  static double DecisionUs(std::chrono::steady_clock::time_point start);

  std::shared_ptr<Proxy> inner_;
  std::unique_ptr<ServiceCatalog> catalog_;
  std::unique_ptr<GroupLatencyPredictor> predictor_;
  const Options options_;
  const Clock* clock_;
  const absl::Time epoch_;
  std::map<std::string, int> service_of_;  // model → catalog id
  std::map<std::string, const ModelConfig*> configs_;

  mutable absl::Mutex mu_;
  OverlapQueues queues_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Query> queries_ ABSL_GUARDED_BY(mu_);
  uint64_t next_query_id_ ABSL_GUARDED_BY(mu_) = 1;
  // A query arrived since the controller last found nothing to run.
  bool work_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Counters counters_ ABSL_GUARDED_BY(mu_);
  // The time of the decision made at the last launch (pipelining).
  double pipelined_decision_us_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace tessera
