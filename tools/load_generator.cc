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
#include "tools/adaptive_throttle.h"
#include "tools/stream_lane.h"

namespace tessera {
namespace {

// Shared by the calls of one run, so a late answer never outlives it.
struct RunState {
  absl::Mutex mu;
  std::vector<LoadGenerator::Record> records ABSL_GUARDED_BY(mu);
  std::map<absl::StatusCode, std::string> first_messages ABSL_GUARDED_BY(mu);
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> done{0};
  // Scheduled requests a lagging sender did not send before the end.
  std::atomic<int64_t> unsent{0};
  std::atomic<int64_t> throttled{0};
  // Per load; null without client-side throttling (or for a closed loop).
  std::vector<std::unique_ptr<AdaptiveThrottle>> throttles;
  absl::Time start;
};

// Tells the load's throttle, if any, how a request it let through ended.
void TellThrottle(RunState* state, int load, absl::Time sent,
                  absl::StatusCode code) {
  AdaptiveThrottle* throttle = state->throttles[load].get();
  if (throttle != nullptr) throttle->Answered(sent, code);
}

// Records the answer to a request sent at `sent`, and the first `message`
// of each error code. `throttled`: refused by the client's own throttle,
// not sent.
void Answered(RunState* state, int load, absl::Time sent, absl::StatusCode code,
              bool throttled = false, absl::string_view message = "") {
  LoadGenerator::Record r;
  r.load = load;
  r.sent = sent - state->start;
  r.latency = absl::Now() - sent;
  r.code = code;
  r.throttled = throttled;
  if (!throttled) TellThrottle(state, load, sent, code);
  {
    absl::MutexLock lock(&state->mu);
    state->records.push_back(r);
    if (code != absl::StatusCode::kOk && !message.empty()) {
      state->first_messages.emplace(
          code,
          std::string(message.substr(0, LoadGenerator::kMaxMessageBytes)));
    }
  }
  state->done++;
}

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
                    std::shared_ptr<RunState> state, absl::Time sent,
                    absl::Duration timeout,
                    std::shared_ptr<Window> window = nullptr) {
    auto* call = new Call(std::move(state), load);
    call->window_ = std::move(window);
    call->sent_ = sent;
    call->context_.set_deadline(absl::ToChronoTime(call->sent_ + timeout));
    call->state_->sent++;
    stub->async()->ModelInfer(&call->context_, &request, &call->response_,
                              [call](grpc::Status s) { call->Done(s); });
  }

 private:
  Call(std::shared_ptr<RunState> state, int load)
      : state_(std::move(state)), load_(load) {}
  void Done(const grpc::Status& s) {
    Answered(state_.get(), load_, sent_, FromGrpcStatus(s).code(),
             /*throttled=*/false, s.error_message());
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

// Open loop over streams: each model's lanes, used round robin (none for
// unary calls or a closed-loop model).
using Lanes = std::vector<std::vector<std::unique_ptr<StreamLane>>>;
Lanes OpenLanes(inference::GRPCInferenceService::Stub* stub,
                const std::vector<LoadGenerator::ModelLoad>& loads,
                const LoadGenerator::Options& options, absl::Time give_up,
                const std::shared_ptr<RunState>& state) {
  Lanes lanes(loads.size());
  for (size_t i = 0; i < loads.size(); ++i) {
    if (loads[i].concurrency > 0) continue;
    for (int k = 0; k < options.streams_per_model; ++k) {
      lanes[i].push_back(std::make_unique<StreamLane>(
          stub, loads[i].request, options.timeout, give_up,
          [state, i](absl::Time sent, std::optional<absl::StatusCode> code) {
            if (code.has_value()) {
              Answered(state.get(), static_cast<int>(i), sent, *code);
            } else {
              // No answer: lost; to the throttle, not accepted.
              TellThrottle(state.get(), static_cast<int>(i), sent,
                           absl::StatusCode::kUnavailable);
              state->done++;
            }
          }));
    }
  }
  return lanes;
}

}  // namespace

LoadGenerator::Result LoadGenerator::Run(
    inference::GRPCInferenceService::Stub* stub,
    const std::vector<ModelLoad>& loads, const Options& options) {
  auto state = std::make_shared<RunState>();
  state->start = absl::Now();
  state->throttles.resize(loads.size());
  for (size_t i = 0; i < loads.size(); ++i) {
    if (options.throttle_k <= 0 || loads[i].concurrency > 0) continue;
    AdaptiveThrottle::Options throttle;
    throttle.k = options.throttle_k;
    throttle.window = options.throttle_window;
    state->throttles[i] = std::make_unique<AdaptiveThrottle>(throttle);
  }
  const absl::Time start = state->start;
  const absl::Time end = start + options.duration;
  // One sender per model with its own Poisson schedule, in absolute times
  // so sending delays do not lower the offered rate. Arrivals are
  // memoryless, so each step of the schedule restarts at its boundary.
  const absl::Time give_up = end + options.timeout + absl::Seconds(5);
  const Lanes lanes = OpenLanes(stub, loads, options, give_up, state);
  std::vector<std::thread> senders;
  std::atomic<int> senders_done{0};
  for (size_t i = 0; i < loads.size(); ++i) {
    senders.emplace_back([&, i] {
      struct Finished {
        std::atomic<int>* n;
        ~Finished() { ++*n; }
      } finished{&senders_done};
      std::mt19937_64 rng(options.seed * 7919 + i);
      std::mt19937_64 throttle_rng(options.seed * 104729 + i);
      std::uniform_real_distribution<double> draw(0, 1);
      AdaptiveThrottle* throttle = state->throttles[i].get();
      size_t next_lane = 0;
      auto send = [&] {
        const absl::Time now = absl::Now();
        if (throttle != nullptr && !throttle->Admit(now, draw(throttle_rng))) {
          state->sent++;
          state->throttled++;
          Answered(state.get(), static_cast<int>(i), now,
                   absl::StatusCode::kResourceExhausted, /*throttled=*/true);
          return;
        }
        if (lanes[i].empty()) {
          Call::Start(stub, loads[i].request, static_cast<int>(i), state, now,
                      options.timeout);
          return;
        }
        state->sent++;
        lanes[i][next_lane]->Send(now);
        next_lane = (next_lane + 1) % lanes[i].size();
      };
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
                      absl::Now(), options.timeout, window);
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
          send();
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
            send();
          }
          next += absl::Seconds(gap(rng));
        }
      }
    });
  }
  bool lanes_closed = false;
  while (true) {
    absl::SleepFor(absl::Seconds(1));
    const int64_t sent = state->sent, done = state->done;
    if (options.progress) options.progress(absl::Now() - start, sent, done);
    // Done when every sender has sent its last request (a sender can lag
    // behind the clock) and every request is answered.
    const bool all_sent = senders_done == static_cast<int>(loads.size());
    if (all_sent && !lanes_closed) {
      for (const auto& model_lanes : lanes) {
        for (const auto& lane : model_lanes) lane->Close();
      }
      lanes_closed = true;
    }
    if (all_sent && sent == done) break;
    if (absl::Now() > give_up) break;
  }
  for (auto& t : senders) t.join();
  for (const auto& model_lanes : lanes) {
    for (const auto& lane : model_lanes) lane->Wait(give_up);
  }

  Result result;
  result.sent = state->sent;
  result.unsent = state->unsent;
  result.throttled = state->throttled;
  absl::MutexLock lock(&state->mu);
  result.records = state->records;
  result.first_messages = state->first_messages;
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
