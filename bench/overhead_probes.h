#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpc_service.grpc.pb.h"

namespace tessera {

// The serving-overhead benchmark's measurements: timed calls, what a
// process spends per call, and what this machine's wake-ups cost.

using Samples = std::vector<double>;  // microseconds

// End-to-end times of calls, and the timing parameters of their answers.
struct Timed {
  Samples total;
  std::map<std::string, Samples> params;
};

// One timed call; false if it failed (reported on stderr).
bool Call(inference::GRPCInferenceService::Stub* stub,
          const inference::ModelInferRequest& request, double* us,
          inference::ModelInferResponse* response);

// a[i] - b[i], as far as both go.
Samples Difference(const Samples& a, const Samples& b);

// CPU time and thread switches of a process so far, summed over its live
// threads (/proc/<pid>/task/*/schedstat and status).
struct ProcessCounters {
  double cpu_us = 0;
  double switches = 0;
  // cpu_us by thread name, its trailing number dropped ("fe-loop-0" and
  // "fe-loop-1" count as "fe-loop"): shows which threads do the work, e.g.
  // gRPC's own threads beside the event loops.
  std::map<std::string, double> cpu_us_by_thread;
};
// now - before, per request of `n`.
ProcessCounters PerRequest(const ProcessCounters& now,
                           const ProcessCounters& before, int n);
ProcessCounters ReadCounters(pid_t pid);

// Round trip (us, p50 of 500) of a 100-byte message between this thread
// pinned to `client_core` and a child process pinned to `server_core`, with
// 1 ms idle before each, over a local SOCK_SEQPACKET pair: what waking an
// idle thread costs on this machine, on the same core and across cores.
// Returns -1 if the child cannot be started.
double WakeRoundTripUs(int client_core, int server_core);

// The core --client_core names among `cores` (this process's), or -1 for
// no pinning ("none", or "last" on a single core).
absl::StatusOr<int> ClientCore(const std::string& flag,
                               const std::vector<int>& cores);

}  // namespace tessera
