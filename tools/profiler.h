#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "model_config.pb.h"
#include "perfmodel/interference_model.h"
#include "profile.pb.h"

namespace tessera {

// Measures performance profiles on real CPU partitions by running the
// models in real proxy processes (the serving path's tessera_proxy, via the
// backend's ProxyHandle), one partition at a time:
//
//  1. Solo: for each model, partition (the first k of the C cores, k = 1..C,
//     share 100 k / C) and batch size, `runs` timed batches after `warmup`
//     ones; the median and p99 of the proxy's execution time, and the
//     throughput, are recorded. Memory is the proxy's resident set after
//     loading and warming up the model.
//  2. Counter stand-in (perf_event counters are not available on these
//     machines): the model's memory pressure, measured as the slowdown it
//     causes to a memory-streaming stressor on the complementary cores
//     (stored as dram_util_percent: 100 x (1 - stressor rate beside the
//     model / stressor rate alone)); partitions with no complementary core
//     take the value of the largest partition that has one. L2 is not
//     measured (0).
//  3. Pairs: every pair of models (itself included) on complementary
//     partitions at the same time, at each model's smallest and largest
//     profiled batch: each one's median latency -> co-location rows, to
//     which the interference models are fitted.
//
// Every measured cell is appended to a progress file as soon as it is
// measured; a run started again with the same progress file skips those
// cells (resume after an interruption).
class Profiler {
 public:
  struct Options {
    std::string proxy_binary;
    std::string model_repository;
    std::vector<std::string> models;  // empty: every model of the repository
    std::vector<int> cores;           // the device's cores
    std::vector<int> batches;         // empty: 1, 2, 4, ... up to max batch
    int warmup = 3;
    int runs = 20;
    bool pairs = true;
    // Stressor measurement window per partition.
    absl::Duration stress_window = absl::Milliseconds(500);
    std::string progress_file;  // required
    // Called after each cell with (done, total).
    std::function<void(int, int)> progress;
  };

  // One measured cell (solo: `other` empty).
  struct Cell {
    std::string model;
    int batch = 0;
    double share = 0;
    std::string other;
    int other_batch = 0;
    double other_share = 0;
    double latency_ms = 0;
    double latency_p99_ms = 0;
    double other_latency_ms = 0;
    double throughput_rps = 0;
    double dram_pressure_percent = 0;  // solo cells only
    int64_t memory_bytes = 0;          // solo cells only
    std::string Key() const;
  };

  struct Result {
    std::map<std::string, ModelProfile> profiles;  // by model
    std::vector<Cell> cells;                       // all, in run order
    std::vector<CoLocationSample> pairs;           // refers to `latency_models`
    std::map<std::string, LatencyModel> latency_models;
  };

  static absl::StatusOr<Result> Run(const Options& options);

  // Reads the cells a progress file holds (missing file: none).
  static absl::StatusOr<std::vector<Cell>> ReadProgress(
      const std::string& path);
};

}  // namespace tessera
