#include "sim/overlap_device_simulator.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <random>

#include "common/percentile.h"

namespace tessera {

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

// The run's state: the device, the queues and what has been measured.
class DeviceRun {
 public:
  DeviceRun(const OverlapWorkload& w, const OverlapSimOptions& o,
            const ServiceCatalog& catalog,
            const GroupLatencyPredictor& predictor,
            const std::function<double(const OperatorGroup&)>& run_ms)
      : options_(o),
        run_ms_(run_ms),
        queues_(catalog, predictor,
                OverlapQueuesOptions{o.scheduler, o.abacus, o.pipeline}),
        queries_(MakeQueries(w, catalog)) {
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
        queues_.Enqueue(queries_[next++]);
        if (!busy_) Dispatch(now);
      } else {
        now = t_device;
        Complete(now);
        Dispatch(now);
      }
      last_ms_ = std::max(last_ms_, now);
    }
    result_.p99_ms = Percentile(latencies_, 0.99);
    const double first = queries_.empty() ? 0 : queries_[0].arrival_ms;
    result_.duration_s = (last_ms_ - first) / 1000.0;
    return std::move(result_);
  }

 private:
  // The device is free: launches the next group, if any.
  void Dispatch(double now) {
    const bool decides = !queues_.has_pending_group();
    auto start = std::chrono::steady_clock::now();
    GroupDecision d = queues_.NextGroup(now);
    if (decides) Timed(start);
    result_.dropped += d.dropped.size();
    if (d.group.empty()) return;
    const double ms = run_ms_(d.group);
    busy_ = true;
    end_ms_ = now + ms;
    result_.busy_s += ms / 1000.0;
    ++result_.rounds;
    if (options_.keep_trace) {
      result_.trace.push_back({now, end_ms_, d.predicted_ms, d.group});
    }
    start = std::chrono::steady_clock::now();
    const std::vector<uint64_t> dropped = queues_.Launched(d, now);
    if (options_.scheduler == OverlapScheduler::kAbacus && options_.pipeline) {
      Timed(start);
    }
    result_.dropped += dropped.size();
  }

  void Timed(std::chrono::steady_clock::time_point start) {
    result_.decision_us.push_back(std::chrono::duration<double, std::micro>(
                                      std::chrono::steady_clock::now() - start)
                                      .count());
  }

  void Complete(double now) {
    busy_ = false;
    for (uint64_t id : queues_.Finished()) {
      const OverlapQuery& q = queries_[id];
      const double latency = now - q.arrival_ms;
      ++result_.served;
      if (latency <= q.qos_ms) ++result_.in_qos;
      latencies_.push_back(latency);
    }
  }

  const OverlapSimOptions& options_;
  const std::function<double(const OperatorGroup&)>& run_ms_;
  OverlapQueues queues_;
  const std::vector<OverlapQuery> queries_;  // by id
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
