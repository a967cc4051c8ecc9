#include "sim/cluster_simulator.h"

#include <algorithm>
#include <memory>
#include <queue>
#include <random>

#include "batching/dispatcher.h"
#include "batching/latency_estimator.h"
#include "batching/weighted_round_robin.h"
#include "common/clock.h"
#include "common/percentile.h"
#include "scheduler/standby_rule.h"

namespace tessera {
namespace {

struct Request {
  int model = 0;  // index into model names
  double arrival_s = 0;
  double deadline_s = 0;
};

struct GpuletSim {
  int device = 0;
  double share = 0;
  std::vector<std::string> models;  // dispatcher model index -> name
  std::unique_ptr<LatencyEstimator> estimator;
  std::unique_ptr<Dispatcher> dispatcher;
  bool busy = false;
  std::string running_model;
  int running_batch = 0;
  FormedBatch batch;
  double exec_s = 0;
  uint64_t wake_token = 0;
  // iGniter's standby: the share it moves to once its calls miss the SLO.
  double standby_share = 0;
  bool on_standby = false;
  int64_t answered = 0, late = 0;  // since the last standby check
};

enum class EventType { kArrival, kDone, kWake, kCheck };

struct Event {
  double time_s;
  uint64_t seq;
  EventType type;
  int index;       // model (arrival) or gpulet
  uint64_t token;  // wake token
  bool operator>(const Event& o) const {
    return time_s != o.time_s ? time_s > o.time_s : seq > o.seq;
  }
};

absl::Time At(double s) { return absl::UnixEpoch() + absl::Seconds(s); }

}  // namespace

SimResult ClusterSimulator::Run(const Plan& plan,
                                const std::map<std::string, double>& rates,
                                const SimOptions& options) const {
  std::mt19937_64 rng(options.seed);
  std::map<std::string, std::vector<double>> arrivals;
  const double end = absl::ToDoubleSeconds(options.duration);
  for (const auto& [model, rate] : rates) {
    if (rate <= 0) continue;
    std::exponential_distribution<double> gap(rate);
    auto& times = arrivals[model];
    for (double t = gap(rng); t < end; t += gap(rng)) times.push_back(t);
  }
  SimOptions o = options;
  o.seed = rng();
  return RunTrace(plan, arrivals, o);
}

SimResult ClusterSimulator::RunTrace(
    const Plan& plan,
    const std::map<std::string, std::vector<double>>& arrivals,
    const SimOptions& options) const {
  std::mt19937_64 rng(options.seed);
  FakeClock clock;
  const double overhead_s = absl::ToDoubleSeconds(options.overhead);
  const double warmup_s = absl::ToDoubleSeconds(options.warmup);
  const double duration_s = absl::ToDoubleSeconds(options.duration);

  std::vector<std::string> names;
  std::map<std::string, int> model_index;
  for (const auto& [name, config] : configs_) {
    model_index[name] = static_cast<int>(names.size());
    names.push_back(name);
  }

  // Gpulets, devices and per-model routing.
  SimResult result;
  std::vector<GpuletSim> gpulets;
  std::vector<std::vector<int>> device_gpulets;
  std::vector<std::vector<int>> route_targets(names.size());
  std::vector<std::vector<int>> route_slot(names.size());
  std::vector<WeightedRoundRobin> route(names.size());
  for (const DevicePlan& device : plan.devices()) {
    const int d = static_cast<int>(device_gpulets.size());
    device_gpulets.emplace_back();
    ++result.gpus_used;
    for (const GpuletPlan& g : device.gpulets()) {
      GpuletSim sim;
      sim.device = d;
      sim.share = g.share_percent();
      sim.standby_share = g.standby_share_percent();
      result.share_sum += g.share_percent();
      sim.estimator = std::make_unique<LatencyEstimator>();
      std::vector<Dispatcher::ModelSlot> slots;
      for (const ModelAssignment& a : g.models()) {
        sim.models.push_back(a.model());
        auto config = configs_.find(a.model());
        slots.push_back(Dispatcher::ModelSlot::For(
            a, config != configs_.end() ? &config->second : nullptr));
        if (const LatencyModel* lm = truth_->model(a.model())) {
          // What the frontend learns from profiles / warm-up: solo latency.
          for (int b = 1; b <= lm->max_batch(); b *= 2) {
            sim.estimator->Seed(a.model(), b,
                                absl::Microseconds(static_cast<int64_t>(
                                    1000 * lm->LatencyMs(b, sim.share))));
          }
        }
        auto it = model_index.find(a.model());
        if (it != model_index.end()) {
          route_targets[it->second].push_back(static_cast<int>(gpulets.size()));
          route_slot[it->second].push_back(static_cast<int>(sim.models.size()) -
                                           1);
          route[it->second].Add(a.rate_rps());
        }
      }
      Dispatcher::Options dopt;
      dopt.max_inflight_batches = 1;
      dopt.initial_overhead = options.overhead;
      sim.dispatcher = std::make_unique<Dispatcher>(slots, sim.estimator.get(),
                                                    &clock, dopt);
      device_gpulets[d].push_back(static_cast<int>(gpulets.size()));
      gpulets.push_back(std::move(sim));
    }
  }

  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  uint64_t seq = 0;
  std::vector<Request> requests;
  std::vector<int> request_gpulet;  // by request id; -1: not routed
  if (!gpulets.empty()) events.push({1.0, seq++, EventType::kCheck, 0, 0});
  for (const auto& [model, times] : arrivals) {
    auto it = model_index.find(model);
    if (it == model_index.end()) continue;
    for (double t : times) {
      events.push({t, seq++, EventType::kArrival, it->second, 0});
    }
  }

  std::vector<ModelResult> stats(names.size());
  std::vector<std::vector<double>> latencies(names.size());
  for (size_t i = 0; i < names.size(); ++i) stats[i].model = names[i];
  auto count = [&](const Request& r) { return r.arrival_s >= warmup_s; };
  auto finish = [&](uint64_t id, double now, bool dropped) {
    const Request& r = requests[id];
    if (request_gpulet[id] >= 0) {
      GpuletSim& g = gpulets[request_gpulet[id]];
      ++g.answered;
      if (dropped || now > r.deadline_s + 1e-12) ++g.late;
    }
    if (!count(r)) return;
    if (dropped) {
      ++stats[r.model].dropped;
      return;
    }
    ++stats[r.model].completed;
    latencies[r.model].push_back(1000 * (now - r.arrival_s));
    if (now > r.deadline_s + 1e-12) ++stats[r.model].late;
  };

  auto process = [&](int gi, double now) {
    GpuletSim& g = gpulets[gi];
    clock.Set(At(now));
    Dispatcher::Decision decision = g.dispatcher->Poll();
    for (const DispatchRequest& r : decision.expired) finish(r.id, now, true);
    for (FormedBatch& b : decision.batches) {
      // Every neighbour running on the same GPU right now.
      std::vector<GroundTruth::Corunner> corunners;
      for (int ni : device_gpulets[g.device]) {
        if (ni != gi && gpulets[ni].busy) {
          corunners.push_back(
              {&gpulets[ni].running_model, gpulets[ni].running_batch});
        }
      }
      const std::string& model = g.models[b.model];
      const double exec_ms =
          truth_->LatencyMs(model, b.items, g.share, corunners, &rng);
      ++result.batches;
      if (!corunners.empty()) {
        ++result.overlapped_batches;
        result.overlapped_factor_sum +=
            truth_->CombinedFactor(model, b.items, g.share, corunners);
      }
      g.busy = true;
      g.running_model = model;
      g.running_batch = b.items;
      g.exec_s = exec_ms / 1000;
      g.batch = std::move(b);
      events.push(
          {now + g.exec_s + overhead_s, seq++, EventType::kDone, gi, 0});
    }
    if (decision.wake_at != absl::InfiniteFuture()) {
      const double t =
          std::max(now, absl::ToDoubleSeconds(decision.wake_at - At(0)));
      events.push({t, seq++, EventType::kWake, gi, ++g.wake_token});
    }
  };

  double now = 0;
  while (!events.empty()) {
    const Event e = events.top();
    events.pop();
    now = e.time_s;
    switch (e.type) {
      case EventType::kArrival: {
        const int m = e.index;
        const uint64_t id = requests.size();
        requests.push_back(
            {m, now, now + configs_.at(names[m]).slo_ms() / 1000});
        request_gpulet.push_back(-1);
        if (count(requests.back())) ++stats[m].arrived;
        if (route_targets[m].empty()) {
          finish(id, now, true);
          break;
        }
        const int pick = route[m].Next();
        const int gi = route_targets[m][pick];
        request_gpulet[id] = gi;
        clock.Set(At(now));
        DispatchRequest dr;
        dr.id = id;
        dr.model = route_slot[m][pick];
        dr.items = 1;
        dr.arrival = At(now);
        dr.deadline = At(requests.back().deadline_s);
        gpulets[gi].dispatcher->Enqueue(dr);
        process(gi, now);
        break;
      }
      case EventType::kDone: {
        GpuletSim& g = gpulets[e.index];
        for (const DispatchRequest& r : g.batch.requests) {
          finish(r.id, now, false);
        }
        clock.Set(At(now));
        g.dispatcher->OnBatchDone(g.batch.batch_id, absl::Seconds(g.exec_s),
                                  absl::Seconds(g.exec_s + overhead_s), true);
        g.busy = false;
        process(e.index, now);
        break;
      }
      case EventType::kWake:
        if (e.token == gpulets[e.index].wake_token) process(e.index, now);
        break;
      case EventType::kCheck:
        for (GpuletSim& g : gpulets) {
          if (g.standby_share <= 0 || g.on_standby ||
              g.answered < kStandbyMinAnswered) {
            continue;
          }
          if (ShouldSwitchToStandby(g.answered, g.late)) {
            g.on_standby = true;
            g.share = g.standby_share;
            ++result.standby_switches;
          }
          g.answered = g.late = 0;
        }
        if (now + 1 < duration_s) {
          events.push({now + 1, seq++, EventType::kCheck, 0, 0});
        }
        break;
    }
  }
  // Whatever is still queued at the end was never served.
  for (GpuletSim& g : gpulets) {
    for (const DispatchRequest& r : g.dispatcher->TakeAll()) {
      finish(r.id, now, true);
    }
  }

  const double counted_s = std::max(1e-9, duration_s - warmup_s);
  for (size_t i = 0; i < names.size(); ++i) {
    ModelResult& s = stats[i];
    if (s.arrived == 0) continue;
    s.throughput_rps = (s.completed - s.late) / counted_s;
    s.p50_ms = Percentile(latencies[i], 0.5);
    s.p99_ms = Percentile(latencies[i], 0.99);
    result.arrived += s.arrived;
    result.violations += s.late + s.dropped;
    result.goodput_rps += s.throughput_rps;
    result.models.push_back(s);
  }
  return result;
}

}  // namespace tessera
