#include "tools/load_generator.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/grpc_status_util.h"
#include "grpcpp/grpcpp.h"

namespace tessera {
namespace {

// Shared by the calls of one run, so a late answer never outlives it.
struct RunState {
  absl::Mutex mu;
  std::vector<LoadGenerator::Record> records ABSL_GUARDED_BY(mu);
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> done{0};
  // Scheduled requests a lagging sender did not send before the end.
  std::atomic<int64_t> unsent{0};
  absl::Time start;
};

// The calls outstanding of one closed-loop model.
struct Window {
  absl::Mutex mu;
  int outstanding ABSL_GUARDED_BY(mu) = 0;
};

// One asynchronous call; deletes itself when done.
class Call {
 public:
  static void Start(inference::GRPCInferenceService::Stub* stub,
                    const inference::ModelInferRequest& request, int load,
                    std::shared_ptr<RunState> state, absl::Duration timeout,
                    std::shared_ptr<Window> window = nullptr) {
    auto* call = new Call(std::move(state), load);
    call->window_ = std::move(window);
    call->sent_ = absl::Now();
    call->context_.set_deadline(absl::ToChronoTime(call->sent_ + timeout));
    call->state_->sent++;
    stub->async()->ModelInfer(&call->context_, &request, &call->response_,
                              [call](grpc::Status s) { call->Done(s); });
  }

 private:
  Call(std::shared_ptr<RunState> state, int load)
      : state_(std::move(state)), load_(load) {}
  void Done(const grpc::Status& s) {
    LoadGenerator::Record r;
    r.load = load_;
    r.sent = sent_ - state_->start;
    r.latency = absl::Now() - sent_;
    r.code = FromGrpcStatus(s).code();
    {
      absl::MutexLock lock(&state_->mu);
      state_->records.push_back(r);
    }
    state_->done++;
    if (window_) {
      absl::MutexLock lock(&window_->mu);
      --window_->outstanding;
    }
    delete this;
  }

  std::shared_ptr<RunState> state_;
  std::shared_ptr<Window> window_;
  const int load_;
  grpc::ClientContext context_;
  inference::ModelInferResponse response_;
  absl::Time sent_;
};

}  // namespace

LoadGenerator::Result LoadGenerator::Run(
    inference::GRPCInferenceService::Stub* stub,
    const std::vector<ModelLoad>& loads, const Options& options) {
  auto state = std::make_shared<RunState>();
  state->start = absl::Now();
  const absl::Time start = state->start;
  const absl::Time end = start + options.duration;
  // One sender per model with its own Poisson schedule, in absolute times
  // so sending delays do not lower the offered rate. Arrivals are
  // memoryless, so each step of the schedule restarts at its boundary.
  std::vector<std::thread> senders;
  std::atomic<int> senders_done{0};
  for (size_t i = 0; i < loads.size(); ++i) {
    senders.emplace_back([&, i] {
      struct Finished {
        std::atomic<int>* n;
        ~Finished() { ++*n; }
      } finished{&senders_done};
      std::mt19937_64 rng(options.seed * 7919 + i);
      if (loads[i].concurrency > 0) {
        auto window = std::make_shared<Window>();
        const int n = loads[i].concurrency;
        while (true) {
          {
            absl::MutexLock lock(&window->mu);
            auto room = [&window, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                            window->mu) { return window->outstanding < n; };
            if (!window->mu.AwaitWithDeadline(absl::Condition(&room), end) ||
                absl::Now() >= end) {
              return;
            }
            ++window->outstanding;
          }
          Call::Start(stub, loads[i].request, static_cast<int>(i), state,
                      options.timeout, window);
        }
      }
      if (!loads[i].times.empty()) {
        for (absl::Duration t : loads[i].times) {
          if (start + t >= end) break;
          if (absl::Now() >= end) {  // lagging: the run is over
            ++state->unsent;
            continue;
          }
          absl::SleepFor(start + t - absl::Now());
          Call::Start(stub, loads[i].request, static_cast<int>(i), state,
                      options.timeout);
        }
        return;
      }
      const std::vector<Step>& steps = loads[i].schedule;
      for (size_t k = 0; k < steps.size(); ++k) {
        const absl::Time from = start + steps[k].start;
        const absl::Time to = std::min(
            end, k + 1 < steps.size() ? start + steps[k + 1].start : end);
        if (steps[k].rate_rps <= 0 || from >= to) continue;
        std::exponential_distribution<double> gap(steps[k].rate_rps);
        absl::Time next = from + absl::Seconds(gap(rng));
        while (next < to) {
          // A sender that lags behind its schedule stops at the end of the
          // run all the same; what it did not send is counted.
          if (absl::Now() >= end) {
            ++state->unsent;
          } else {
            absl::SleepFor(next - absl::Now());
            Call::Start(stub, loads[i].request, static_cast<int>(i), state,
                        options.timeout);
          }
          next += absl::Seconds(gap(rng));
        }
      }
    });
  }
  const absl::Time give_up = end + options.timeout + absl::Seconds(5);
  while (true) {
    absl::SleepFor(absl::Seconds(1));
    const int64_t sent = state->sent, done = state->done;
    if (options.progress) options.progress(absl::Now() - start, sent, done);
    // Done when every sender has sent its last request (a sender can lag
    // behind the clock) and every request is answered.
    if (senders_done == static_cast<int>(loads.size()) && sent == done) break;
    if (absl::Now() > give_up) break;
  }
  for (auto& t : senders) t.join();

  Result result;
  result.sent = state->sent;
  result.unsent = state->unsent;
  absl::MutexLock lock(&state->mu);
  result.records = state->records;
  std::sort(result.records.begin(), result.records.end(),
            [](const Record& a, const Record& b) { return a.sent < b.sent; });
  result.lost = result.sent - static_cast<int64_t>(result.records.size());
  for (const Record& r : result.records) {
    // The client's own deadline expired: the server never answered.
    if (r.code == absl::StatusCode::kDeadlineExceeded &&
        r.latency >= options.timeout - absl::Milliseconds(50)) {
      ++result.lost;
    }
  }
  return result;
}

}  // namespace tessera
