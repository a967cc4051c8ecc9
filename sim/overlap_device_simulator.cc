#include "sim/overlap_device_simulator.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <optional>
#include <random>

#include "common/percentile.h"

namespace tessera {

const char* OverlapSchedulerName(OverlapScheduler s) {
  switch (s) {
    case OverlapScheduler::kAbacus:
      return "abacus";
    case OverlapScheduler::kFcfs:
      return "fcfs";
    case OverlapScheduler::kSjf:
      return "sjf";
    case OverlapScheduler::kEdf:
      return "edf";
  }
  return "?";
}

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

std::vector<OverlapQuery> MakeQueries(const OverlapWorkload& w,
                                      const ServiceCatalog& catalog) {
  std::mt19937_64 rng(w.seed);
  std::exponential_distribution<double> gap(w.load_qps / 1000.0);
  std::uniform_int_distribution<int> pick(
      0, static_cast<int>(w.services.size()) - 1);
  std::uniform_int_distribution<int> seq(
      0, static_cast<int>(w.sequence_lengths.size()) - 1);
  std::vector<OverlapQuery> queries(w.queries);
  double t = 0;
  for (int i = 0; i < w.queries; ++i) {
    t += gap(rng);
    OverlapQuery& q = queries[i];
    q.id = i;
    q.service = w.services[pick(rng)];
    q.arrival_ms = t;
    q.qos_ms = w.qos_ms;
    q.batch = w.batch;
    q.seqlen = catalog.service(q.service).sequence_input
                   ? w.sequence_lengths[seq(rng)]
                   : 0;
  }
  return queries;
}

// The run's state: queues, the device, and what has been measured.
class DeviceRun {
 public:
  DeviceRun(const OverlapWorkload& w, const OverlapSimOptions& o,
            const ServiceCatalog& catalog,
            const GroupLatencyPredictor& predictor,
            const std::function<double(const OperatorGroup&)>& run_ms)
      : options_(o),
        catalog_(catalog),
        run_ms_(run_ms),
        abacus_(catalog, predictor, o.abacus),
        sequential_(
            catalog, predictor,
            o.scheduler == OverlapScheduler::kSjf   ? SequentialOrder::kSjf
            : o.scheduler == OverlapScheduler::kEdf ? SequentialOrder::kEdf
                                                    : SequentialOrder::kFcfs),
        queries_(MakeQueries(w, catalog)),
        active_(catalog.size(), -1),
        queues_(catalog.size()) {
    result_.queries = w.queries;
  }

  OverlapRunResult Run() {
    size_t next = 0;
    double now = 0;
    while (true) {
      const double t_arrival =
          next < queries_.size() ? queries_[next].arrival_ms : kNever;
      const double t_device = busy_ ? end_ms_ : kNever;
      if (t_arrival == kNever && t_device == kNever) break;
      if (t_arrival <= t_device) {
        now = t_arrival;
        Enqueue(next++);
        if (!busy_) Dispatch(now);
      } else {
        now = t_device;
        Complete(now);
        if (pending_ && !pending_->group.empty()) {
          const GroupDecision d = std::move(*pending_);
          pending_.reset();
          Launch(d, now);
        } else {
          pending_.reset();
          Dispatch(now);
        }
      }
      last_ms_ = std::max(last_ms_, now);
    }
    result_.p99_ms = Percentile(latencies_, 0.99);
    const double first = queries_.empty() ? 0 : queries_[0].arrival_ms;
    result_.duration_s = (last_ms_ - first) / 1000.0;
    return std::move(result_);
  }

 private:
  bool abacus() const {
    return options_.scheduler == OverlapScheduler::kAbacus;
  }

  void Enqueue(size_t i) {
    if (abacus()) {
      queues_[queries_[i].service].push_back(static_cast<int>(i));
    } else {
      waiting_.push_back(static_cast<int>(i));
    }
  }

  // Decides now (nothing running) and launches what was decided.
  void Dispatch(double now) {
    GroupDecision d = Decide(now, 0);
    if (d.group.empty()) return;
    Launch(d, now);
  }

  GroupDecision Decide(double now, double running_ms) {
    std::vector<OverlapQuery> candidates;
    if (abacus()) {
      for (int s = 0; s < catalog_.size(); ++s) {
        if (active_[s] < 0 && !queues_[s].empty()) {
          active_[s] = queues_[s].front();
          queues_[s].pop_front();
        }
        if (active_[s] >= 0) candidates.push_back(queries_[active_[s]]);
      }
    } else {
      for (int i : waiting_) candidates.push_back(queries_[i]);
    }
    const auto start = std::chrono::steady_clock::now();
    GroupDecision d = abacus() ? abacus_.Decide(candidates, now, running_ms)
                               : sequential_.Decide(candidates, now);
    result_.decision_us.push_back(std::chrono::duration<double, std::micro>(
                                      std::chrono::steady_clock::now() - start)
                                      .count());
    for (uint64_t id : d.dropped) {
      ++result_.dropped;
      Remove(static_cast<int>(id));
    }
    return d;
  }

  // The query leaves the controller's view (finished or dropped).
  void Remove(int i) {
    if (abacus()) {
      int& slot = active_[queries_[i].service];
      if (slot == i) slot = -1;
    } else {
      waiting_.erase(std::find(waiting_.begin(), waiting_.end(), i));
    }
  }

  void Launch(const GroupDecision& d, double now) {
    finishing_.clear();
    for (size_t k = 0; k < d.group.size(); ++k) {
      const int i = static_cast<int>(d.member_ids[k]);
      queries_[i].next_op = d.group[k].end_op;
      if (d.group[k].end_op ==
          catalog_.service(queries_[i].service).operators) {
        finishing_.push_back(i);
        Remove(i);
      }
    }
    const double ms = run_ms_(d.group);
    busy_ = true;
    end_ms_ = now + ms;
    result_.busy_s += ms / 1000.0;
    ++result_.rounds;
    if (options_.keep_trace) {
      result_.trace.push_back({now, end_ms_, d.predicted_ms, d.group});
    }
    if (abacus() && options_.pipeline) {
      pending_ = Decide(now, d.predicted_ms);
    }
  }

  void Complete(double now) {
    busy_ = false;
    for (int i : finishing_) {
      const double latency = now - queries_[i].arrival_ms;
      ++result_.served;
      if (latency <= queries_[i].qos_ms) ++result_.in_qos;
      latencies_.push_back(latency);
    }
    finishing_.clear();
  }

  const OverlapSimOptions& options_;
  const ServiceCatalog& catalog_;
  const std::function<double(const OperatorGroup&)>& run_ms_;
  AbacusController abacus_;
  SequentialController sequential_;
  std::vector<OverlapQuery> queries_;
  std::vector<int> active_;              // per service: query or -1
  std::vector<std::deque<int>> queues_;  // per service (Abacus)
  std::vector<int> waiting_;             // all queued (baselines)
  std::vector<int> finishing_;           // complete when the group ends
  std::optional<GroupDecision> pending_;
  bool busy_ = false;
  double end_ms_ = 0;
  double last_ms_ = 0;
  std::vector<double> latencies_;
  OverlapRunResult result_;
};

}  // namespace

OverlapRunResult SimulateOverlapDevice(
    const OverlapWorkload& workload, const OverlapSimOptions& options,
    const ServiceCatalog& catalog, const GroupLatencyPredictor& predictor,
    const std::function<double(const OperatorGroup&)>& run_ms) {
  return DeviceRun(workload, options, catalog, predictor, run_ms).Run();
}

}  // namespace tessera
