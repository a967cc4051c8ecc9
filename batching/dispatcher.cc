#include "batching/dispatcher.h"

#include <algorithm>

namespace tessera {

Dispatcher::ModelSlot Dispatcher::ModelSlot::For(
    const ModelAssignment& assignment, const ModelConfig* config) {
  ModelSlot slot{assignment.model(), std::max(1, assignment.batch_size()),
                 absl::Microseconds(
                     static_cast<int64_t>(assignment.duty_cycle_ms() * 1000))};
  if (config != nullptr && config->has_max_queue_delay_ms()) {
    slot.max_queue_delay = absl::Microseconds(
        static_cast<int64_t>(config->max_queue_delay_ms() * 1000));
  }
  return slot;
}

Dispatcher::Dispatcher(std::vector<ModelSlot> models,
                       LatencyEstimator* estimator, const Clock* clock,
                       Options options)
    : models_(std::move(models)),
      estimator_(estimator),
      clock_(clock),
      options_(options),
      queues_(models_.size()),
      last_sent_(models_.size(), absl::InfinitePast()),
      last_probe_(models_.size(), clock->Now()),
      last_departure_(models_.size(), absl::InfinitePast()),
      last_departure_wait_(models_.size(), absl::ZeroDuration()),
      overhead_(options.initial_overhead) {}

void Dispatcher::Enqueue(const DispatchRequest& request) {
  auto& queue = queues_.at(request.model);
  // Deadlines mostly arrive in order; insert after every request due no
  // later (stable for equal deadlines).
  auto it = std::upper_bound(
      queue.begin(), queue.end(), request.deadline,
      [](absl::Time d, const DispatchRequest& r) { return d < r.deadline; });
  queue.insert(it, request);
}

size_t Dispatcher::queued() const {
  size_t n = 0;
  for (const auto& q : queues_) n += q.size();
  return n;
}

absl::Duration Dispatcher::QueueWait(int model, absl::Time now) const {
  const std::deque<DispatchRequest>& queue = queues_[model];
  absl::Duration wait = absl::ZeroDuration();
  if (!queue.empty()) wait = now - queue.front().arrival;
  return std::max(wait,
                  last_departure_wait_[model] - (now - last_departure_[model]));
}

void Dispatcher::Depart(int model, absl::Time now, absl::Duration wait) {
  last_departure_[model] = now;
  last_departure_wait_[model] = wait;
}

absl::Duration Dispatcher::Exec(int model, int items) const {
  return estimator_->Predict(models_[model].name, items) *
         (1.0 + options_.exec_margin_fraction);
}

absl::Time Dispatcher::Completion(absl::Time now, int model, int items) const {
  return std::max(now + overhead_, busy_until_) + Exec(model, items);
}

void Dispatcher::ShedOldest(absl::Time now, int m,
                            std::vector<DispatchRequest>* expired) {
  auto& queue = queues_[m];
  const int cap = models_[m].batch_cap;
  // Items of the first full batch after the front request, if the queue
  // holds one.
  auto full_batch_behind_front = [&]() {
    int items = 0;
    for (size_t i = 1; i < queue.size(); ++i) {
      items += queue[i].items;
      if (items >= cap) return true;
    }
    return false;
  };
  while (!queue.empty() && full_batch_behind_front() &&
         Completion(now, m, cap) > queue.front().deadline) {
    expired->push_back(queue.front());
    queue.pop_front();
  }
}

void Dispatcher::Expire(absl::Time now, std::vector<DispatchRequest>* expired) {
  // Expire requests that cannot make it even as the next batch, alone.
  for (int m = 0; m < static_cast<int>(queues_.size()); ++m) {
    auto& queue = queues_[m];
    const size_t first = expired->size();
    while (!queue.empty() &&
           Completion(now, m, queue.front().items) > queue.front().deadline) {
      expired->push_back(queue.front());
      queue.pop_front();
    }
    if (options_.shed_oldest_in_backlog) ShedOldest(now, m, expired);
    if (expired->size() > first) {
      const DispatchRequest& last = expired->back();
      Depart(m, now, last.deadline - last.arrival);
    }
    if (expired->size() == first ||
        options_.probe_interval <= absl::ZeroDuration()) {
      continue;
    }
    const absl::Duration interval =
        std::max(options_.probe_interval, 10 * Exec(m, 1));
    // The expired request with the most slack is the last one (deadline
    // order); it goes back to the queue's front, sent next.
    if (now - last_probe_[m] >= interval && expired->back().deadline > now) {
      queue.push_front(expired->back());
      expired->pop_back();
      last_probe_[m] = now;
    }
  }
}

Dispatcher::Decision Dispatcher::Poll() {
  const absl::Time now = clock_->Now();
  Decision decision;
  if (options_.pass_through) {
    for (int m = 0; m < static_cast<int>(queues_.size()); ++m) {
      for (const DispatchRequest& r : queues_[m]) {
        FormedBatch batch;
        batch.batch_id = next_batch_id_++;
        batch.model = m;
        batch.items = r.items;
        batch.requests = {r};
        batch.predicted_exec = estimator_->Predict(models_[m].name, r.items);
        inflight_[batch.batch_id] =
            Inflight{m, r.items, now, batch.predicted_exec};
        decision.batches.push_back(std::move(batch));
      }
      queues_[m].clear();
    }
    return decision;
  }

  Expire(now, &decision.expired);

  while (static_cast<int>(inflight_.size()) < options_.max_inflight_batches) {
    const bool idle_soon = inflight_.empty() || busy_until_ <= now + overhead_;
    int best = -1;
    size_t best_take = 0;
    int best_items = 0;
    for (int m = 0; m < static_cast<int>(queues_.size()); ++m) {
      const auto& queue = queues_[m];
      if (queue.empty()) continue;
      const int cap = models_[m].batch_cap;
      // Prefix up to the cap (the first request always fits: requests are
      // validated against the model's max batch, which may exceed the cap).
      size_t take = 0;
      int items = 0;
      while (take < queue.size() &&
             (take == 0 || items + queue[take].items <= cap)) {
        items += queue[take].items;
        ++take;
      }
      const bool full = items >= cap || take < queue.size();
      const absl::Time oldest_deadline = queue.front().deadline;
      const bool must_send =
          now + overhead_ + Exec(m, items) >= oldest_deadline;  // rule (b)
      const absl::Duration duty = models_[m].duty_cycle;
      const bool round_due = duty > absl::ZeroDuration() &&
                             now >= last_sent_[m] + duty;  // rule (c)
      const bool waited_enough =
          now >= queue.front().arrival + models_[m].max_queue_delay;  // (e)
      const bool ready = full || must_send || round_due || waited_enough ||
                         (options_.work_conserving && idle_soon);
      if (!ready) continue;
      // Largest prefix that still meets the oldest request's deadline.
      while (take > 1 && Completion(now, m, items) > oldest_deadline) {
        --take;
        items -= queue[take].items;
      }
      if (best < 0 || oldest_deadline < queues_[best].front().deadline) {
        best = m;
        best_take = take;
        best_items = items;
      }
    }
    if (best < 0) break;

    FormedBatch batch;
    batch.batch_id = next_batch_id_++;
    batch.model = best;
    batch.items = best_items;
    batch.predicted_exec = Exec(best, best_items);
    auto& queue = queues_[best];
    batch.requests.assign(queue.begin(), queue.begin() + best_take);
    queue.erase(queue.begin(), queue.begin() + best_take);
    Depart(best, now, now - batch.requests.front().arrival);
    busy_until_ = Completion(now, best, best_items);
    last_sent_[best] = now;
    last_probe_[best] = now;
    inflight_[batch.batch_id] =
        Inflight{best, best_items, now, batch.predicted_exec};
    decision.batches.push_back(std::move(batch));
  }

  // Next moment something changes without an event: a queue's oldest
  // request reaches its latest send time, or the gpulet is about to idle.
  const bool can_send =
      static_cast<int>(inflight_.size()) < options_.max_inflight_batches;
  for (int m = 0; m < static_cast<int>(queues_.size()); ++m) {
    const auto& queue = queues_[m];
    if (queue.empty()) continue;
    absl::Time t =
        queue.front().deadline - overhead_ -
        Exec(m, std::min(models_[m].batch_cap, static_cast<int>(queue.size())));
    if (options_.work_conserving && !inflight_.empty()) {
      t = std::min(t, busy_until_ - overhead_);
    }
    if (models_[m].duty_cycle > absl::ZeroDuration() &&
        last_sent_[m] != absl::InfinitePast()) {
      t = std::min(t, last_sent_[m] + models_[m].duty_cycle);
    }
    t = std::min(t, queue.front().arrival + models_[m].max_queue_delay);
    if (t <= now) {
      // Only an event (a completion) can unblock this queue now; if we can
      // send, we would have. Re-check expiry shortly in any case.
      t = can_send ? now + absl::Microseconds(100) : absl::InfiniteFuture();
    }
    decision.wake_at = std::min(decision.wake_at, t);
  }
  return decision;
}

void Dispatcher::RecomputeBusyUntil(absl::Time now) {
  busy_until_ = absl::InfinitePast();
  absl::Time t = now;
  for (const auto& [id, f] : inflight_) {  // ids ascend in send order
    t = std::max(t, f.sent + overhead_) + f.predicted_exec;
    busy_until_ = t;
  }
}

void Dispatcher::OnBatchDone(uint64_t batch_id, absl::Duration exec,
                             absl::Duration round_trip, bool ok) {
  auto it = inflight_.find(batch_id);
  if (it == inflight_.end()) return;
  const Inflight done = it->second;
  inflight_.erase(it);
  if (ok) {
    estimator_->Observe(models_[done.model].name, done.items, exec);
    const absl::Duration extra =
        std::max(absl::ZeroDuration(), round_trip - exec);
    overhead_ = overhead_ * (1 - options_.overhead_ewma_weight) +
                extra * options_.overhead_ewma_weight;
  }
  RecomputeBusyUntil(clock_->Now());
}

std::vector<DispatchRequest> Dispatcher::TakeAll() {
  std::vector<DispatchRequest> all;
  for (auto& queue : queues_) {
    all.insert(all.end(), queue.begin(), queue.end());
    queue.clear();
  }
  return all;
}

}  // namespace tessera
