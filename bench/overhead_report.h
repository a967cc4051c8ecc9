#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "bench/overhead_probes.h"

namespace tessera {

// What the serving-overhead benchmark measured for one model.
struct ModelOverhead {
  size_t request_bytes = 0;
  // The echo floor: back to back, and alternating with end-to-end calls.
  Samples floor_b2b, floor;
  // End to end through the cluster, with the answers' timing parameters.
  Timed e2e;
  // The proxy's exec against references, request by request: the runner
  // in this process, a second in-process copy of the model (`copy`), and
  // the model on a second proxy process (`second`, --reference_proxy).
  struct {
    Samples proxy, in_process, copy, second;
  } exec_alt;
  // The cores of the model's gpulet.
  std::vector<int> cores;
  // Per process (echo server, frontend, backend, proxy): CPU time and
  // switches per request of the alternating run.
  std::map<std::string, ProcessCounters> cost;
  // The in-process runner on the gpulet's cores: back to back, paced, and
  // with an echo call between runs.
  Samples inproc, paced, with_echo;
};

// Prints the benchmark's tables: latency and overhead, proxy exec against
// its references, the per-hop breakdown and the work per request.
void PrintOverheadReport(const std::vector<std::string>& models,
                         const std::map<std::string, ModelOverhead>& results,
                         int iterations);

}  // namespace tessera
