#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/percentile.h"
#include "grpc_service.grpc.pb.h"

namespace tessera {

// Load per model: open-loop Poisson arrivals at a piecewise-constant rate
// or the timestamps of a trace, sent asynchronously (a slow server does not
// lower the offered load); or closed-loop with a fixed number of calls
// outstanding.
// Records every request's outcome. Used by tessera_loadgen, the scenario
// runner and the integration tests.
class LoadGenerator {
 public:
  // From `start` on (relative to the run's start), `rate_rps` (0 = silent).
  struct Step {
    absl::Duration start;
    double rate_rps = 0;
  };
  struct ModelLoad {
    std::string model;
    inference::ModelInferRequest request;
    std::vector<Step> schedule;  // ascending start times
    // Trace replay: send exactly at these offsets from the start
    // (ascending) instead of the Poisson schedule.
    std::vector<absl::Duration> times;
    // Closed loop: keep exactly this many calls outstanding (a new one
    // leaves as each is answered) instead of the schedule; 0 = open loop.
    int concurrency = 0;
  };
  struct Record {
    int load = 0;         // index into the loads
    absl::Duration sent;  // since the run's start
    absl::Duration latency;
    absl::StatusCode code = absl::StatusCode::kUnknown;
    // Refused by the client's own throttle (code RESOURCE_EXHAUSTED),
    // never sent.
    bool throttled = false;
  };
  struct Options {
    absl::Duration duration = absl::Seconds(10);
    // Client deadline of each request. A request still unanswered then
    // counts as lost (see Result).
    absl::Duration timeout = absl::Seconds(30);
    uint64_t seed = 1;
    // Open loop: send each model's requests over this many
    // ModelStreamInfer streams (round robin; a request's answer is matched
    // by its id) instead of one unary call each; 0: unary calls. An answer
    // after the request's timeout counts as lost, as for a unary call.
    int streams_per_model = 0;
    // Client-side adaptive throttling (tools/adaptive_throttle.h), one
    // throttle per model with this k; 0: off (every request is sent).
    double throttle_k = 0;
    absl::Duration throttle_window = absl::Seconds(10);
    // Called about once a second with (elapsed, sent, answered).
    std::function<void(absl::Duration, int64_t, int64_t)> progress;
  };
  struct Result {
    std::vector<Record> records;  // ordered by send time
    // Requests the schedule offered, throttled ones included.
    int64_t sent = 0;
    // Of those, refused by the client's throttle and never sent.
    int64_t throttled = 0;
    // Requests the schedule held that were not sent because a sender fell
    // behind it (the client machine could not keep up): the rate sent is
    // below the nominal one by these. Senders stop at the duration all
    // the same.
    int64_t unsent = 0;
    // Requests that got no answer before their client deadline (the
    // server never responded) or were still pending when the generator
    // gave up waiting.
    int64_t lost = 0;
    // The first message of each error code answered over unary calls (at
    // most kMaxMessageBytes of it): what the server said, to tell one
    // UNAVAILABLE from another.
    std::map<absl::StatusCode, std::string> first_messages;
  };
  static constexpr size_t kMaxMessageBytes = 300;

  // Sends `loads` on `stub` for `options.duration`, then waits for every
  // answer (at most options.timeout more).
  static Result Run(inference::GRPCInferenceService::Stub* stub,
                    const std::vector<ModelLoad>& loads,
                    const Options& options);
};

}  // namespace tessera
