#include "backend/overlap_proxy.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/status_macros.h"
#include "common/status_proto.h"
#include "common/thread_name.h"

namespace tessera {
namespace {

// Device milliseconds → wall milliseconds on a time-scaled device.
class ScaledPredictor : public GroupLatencyPredictor {
 public:
  ScaledPredictor(LearnedGroupPredictor inner, double scale)
      : inner_(std::move(inner)), scale_(scale) {}
  std::vector<double> PredictMs(
      const std::vector<OperatorGroup>& groups) const override {
    std::vector<double> ms = inner_.PredictMs(groups);
    for (double& v : ms) v *= scale_;
    return ms;
  }

 private:
  LearnedGroupPredictor inner_;
  double scale_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OverlapProxy>> OverlapProxy::Create(
    std::shared_ptr<Proxy> inner, const GroupPredictorProto& predictor_proto,
    Options options, const Clock* clock) {
  if (!(options.time_scale > 0)) {
    return absl::InvalidArgumentError("time_scale must be > 0");
  }
  std::map<std::string, const ModelConfig*> by_name;
  for (const ModelConfig& m : options.models) by_name[m.name()] = &m;
  // The catalog is the predictor's feature order. Operator counts come
  // from the models' configs; sequence lengths are features only of the
  // A100 set's BERT, as the profilers encode them (the cpu profiler runs
  // bert_tiny at its one sequence length).
  std::vector<OverlapService> services;
  for (const std::string& name : predictor_proto.services()) {
    OverlapService service;
    service.name = name;
    auto a100 = ServiceCatalog::A100().IdOf(name);
    if (a100.ok()) {
      service.operators = ServiceCatalog::A100().service(*a100).operators;
      service.sequence_input =
          ServiceCatalog::A100().service(*a100).sequence_input;
    }
    auto it = by_name.find(name);
    if (it != by_name.end()) service.operators = it->second->segment_count();
    service.operators = std::max(service.operators, 1);
    services.push_back(service);
  }
  for (const auto& [name, m] : by_name) {
    if (m->segment_count() <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model '", name,
                       "' has no segment_count: operator-group "
                       "scheduling runs models by range of segments"));
    }
    bool known = false;
    for (const OverlapService& s : services) known |= s.name == name;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("the group predictor (", predictor_proto.device_kind(),
                       ") has no service '", name, "'"));
    }
  }
  auto catalog = std::make_unique<ServiceCatalog>(std::move(services));
  ASSIGN_OR_RETURN(LearnedGroupPredictor learned,
                   LearnedGroupPredictor::Create(*catalog, predictor_proto));
  auto predictor =
      std::make_unique<ScaledPredictor>(std::move(learned), options.time_scale);
  return Create(std::move(inner), std::move(catalog), std::move(predictor),
                std::move(options), clock);
}

absl::StatusOr<std::unique_ptr<OverlapProxy>> OverlapProxy::Create(
    std::shared_ptr<Proxy> inner, std::unique_ptr<ServiceCatalog> catalog,
    std::unique_ptr<GroupLatencyPredictor> predictor, Options options,
    const Clock* clock) {
  for (const ModelConfig& m : options.models) {
    auto id = catalog->IdOf(m.name());
    if (!id.ok() || catalog->service(*id).operators != m.segment_count()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", m.name(), "' (", m.segment_count(),
          " segments) is not a service of the group predictor's catalog"));
    }
  }
  return std::unique_ptr<OverlapProxy>(
      new OverlapProxy(std::move(inner), std::move(catalog),
                       std::move(predictor), std::move(options), clock));
}

OverlapProxy::OverlapProxy(std::shared_ptr<Proxy> inner,
                           std::unique_ptr<ServiceCatalog> catalog,
                           std::unique_ptr<GroupLatencyPredictor> predictor,
                           Options options, const Clock* clock)
    : inner_(std::move(inner)),
      catalog_(std::move(catalog)),
      predictor_(std::move(predictor)),
      options_(std::move(options)),
      clock_(clock),
      epoch_(clock->Now()),
      queues_(*catalog_, *predictor_, options_.queues) {
  for (int s = 0; s < catalog_->size(); ++s) {
    service_of_[catalog_->service(s).name] = s;
  }
  for (const ModelConfig& m : options_.models) configs_[m.name()] = &m;
  thread_ = std::thread([this] { Loop(); });
}

OverlapProxy::~OverlapProxy() { Stop(); }

double OverlapProxy::NowMs() const {
  return absl::ToDoubleMilliseconds(clock_->Now() - epoch_);
}

void OverlapProxy::Execute(BatchRequest batch, DoneCallback done) {
  absl::Status refused;
  auto config = configs_.find(batch.model());
  if (config == configs_.end()) {
    refused = absl::NotFoundError(absl::StrCat(
        "model '", batch.model(), "' is not served by this gpulet"));
  } else if (batch.inputs_size() == 0 || batch.inputs(0).shape_size() == 0 ||
             batch.inputs(0).shape(0) < 1) {
    refused = absl::InvalidArgumentError(
        "a query needs inputs with a leading batch dimension");
  }
  if (refused.ok()) {
    OverlapQuery q;
    q.service = service_of_.at(batch.model());
    q.batch = static_cast<int>(batch.inputs(0).shape(0));
    if (catalog_->service(q.service).sequence_input &&
        batch.inputs(0).shape_size() >= 2) {
      q.seqlen = static_cast<int>(batch.inputs(0).shape(1));
    }
    q.qos_ms = batch.deadline_budget_ms() > 0 ? batch.deadline_budget_ms()
                                              : config->second->slo_ms();
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      q.arrival_ms = NowMs();
      q.id = next_query_id_++;
      queries_[q.id] = Query{std::move(batch), std::move(done), clock_->Now()};
      queues_.Enqueue(q);
      ++counters_.queries;
      work_ = true;
      return;
    }
    refused = absl::UnavailableError("the gpulet is stopping");
  }
  BatchResponse response;
  response.set_batch_id(batch.batch_id());
  ToStatusProto(refused, response.mutable_status());
  done(std::move(response));
}

void OverlapProxy::Loop() {
  NameThisThread("overlap");
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](OverlapProxy* p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) {
            return p->stopping_ || p->work_;
          },
          this));
      if (stopping_) return;
      work_ = false;
    }
    while (RunRound()) {
    }
  }
}

double OverlapProxy::DecisionUs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now() - start)
      .count();
}

void OverlapProxy::Answer(const std::vector<uint64_t>& ids,
                          const absl::Status& status, Answers* answers) {
  for (uint64_t id : ids) {
    auto it = queries_.find(id);
    if (it == queries_.end()) continue;
    BatchResponse response;
    response.set_batch_id(it->second.batch.batch_id());
    ToStatusProto(status, response.mutable_status());
    answers->emplace_back(std::move(it->second.done), std::move(response));
    queries_.erase(it);
    if (absl::IsDeadlineExceeded(status)) ++counters_.dropped;
  }
}

namespace {

absl::Status Missed() {
  return absl::DeadlineExceededError(
      "operator-group controller: the query cannot meet its deadline");
}

void Run(std::vector<std::pair<Proxy::DoneCallback, BatchResponse>>* answers) {
  for (auto& [done, response] : *answers) done(std::move(response));
  answers->clear();
}

}  // namespace

GroupDecision OverlapProxy::DecideRound(
    std::vector<GroupMemberRequest>* members, double* decision_us,
    Answers* answers) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return {};
  const bool decides = !queues_.has_pending_group();
  const auto start = std::chrono::steady_clock::now();
  GroupDecision d = queues_.NextGroup(NowMs());
  *decision_us = decides ? DecisionUs(start) : pipelined_decision_us_;
  Answer(d.dropped, Missed(), answers);
  for (size_t k = 0; k < d.group.size(); ++k) {
    const GroupMember& g = d.group[k];
    members->push_back(
        GroupMemberRequest{d.member_ids[k], g.start_op, g.end_op,
                           &queries_.at(d.member_ids[k]).batch,
                           g.end_op == catalog_->service(g.service).operators});
  }
  return d;
}

void OverlapProxy::Launched(const GroupDecision& d, Answers* answers) {
  absl::MutexLock lock(&mu_);
  ++counters_.groups;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<uint64_t> dropped = queues_.Launched(d, NowMs());
  if (options_.queues.scheduler == OverlapScheduler::kAbacus &&
      options_.queues.pipeline) {
    pipelined_decision_us_ = DecisionUs(start);
  }
  Answer(dropped, Missed(), answers);
}

void OverlapProxy::FinishRound(const GroupDecision& d, GroupResponse result,
                               Answers* answers) {
  absl::MutexLock lock(&mu_);
  const std::vector<uint64_t> done_ids = queues_.Finished();
  if (!result.status.ok()) {
    // The proxy forgot every member's query: none can continue.
    Answer(done_ids, result.status, answers);
    for (uint64_t id : d.member_ids) queues_.Forget(id);
    Answer(d.member_ids, result.status, answers);
    return;
  }
  for (uint64_t id : done_ids) {
    auto it = queries_.find(id);
    if (it == queries_.end()) continue;
    auto out = result.finished.find(id);
    BatchResponse response;
    if (out != result.finished.end()) {
      response = std::move(out->second);
    } else {
      ToStatusProto(absl::InternalError(
                        "the proxy returned no outputs for a finished query"),
                    response.mutable_status());
    }
    response.set_batch_id(it->second.batch.batch_id());
    response.set_backend_time_us(
        absl::ToInt64Microseconds(clock_->Now() - it->second.received));
    answers->emplace_back(std::move(it->second.done), std::move(response));
    queries_.erase(it);
    ++counters_.answered;
  }
}

bool OverlapProxy::RunRound() {
  Answers answers;
  std::vector<GroupMemberRequest> members;
  double decision_us = 0;
  const GroupDecision d = DecideRound(&members, &decision_us, &answers);
  Run(&answers);
  if (d.group.empty()) return false;
  absl::Notification finished;
  GroupResponse result;
  inner_->ExecuteGroup(members, [&](GroupResponse r) {
    result = std::move(r);
    finished.Notify();
  });
  Launched(d, &answers);  // the pipelined decision overlaps the group
  Run(&answers);
  if (options_.on_group) {
    options_.on_group(static_cast<int>(d.group.size()), decision_us);
  }
  finished.WaitForNotification();
  FinishRound(d, std::move(result), &answers);
  Run(&answers);
  return true;
}

bool OverlapProxy::Drain(absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  {
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return queries_.empty();
    };
    if (!mu_.AwaitWithDeadline(absl::Condition(&idle), until)) return false;
  }
  return inner_->Drain(until - absl::Now());
}

void OverlapProxy::Stop(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  inner_->Stop(grace);  // answers a group in flight
  if (thread_.joinable()) thread_.join();
  Answers answers;
  {
    absl::MutexLock lock(&mu_);
    queues_.TakeAll();
    std::vector<uint64_t> ids;
    for (const auto& [id, q] : queries_) ids.push_back(id);
    Answer(ids, absl::UnavailableError("the gpulet stopped"), &answers);
  }
  for (auto& [done, response] : answers) done(std::move(response));
}

OverlapProxy::Counters OverlapProxy::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace tessera
