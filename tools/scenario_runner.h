#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/shared_secret.h"
#include "grpc_service.grpc.pb.h"

namespace tessera {

// Drives a running cluster with a time-varying rate schedule (like the
// gpulet paper's Fig. 15: rates rise, fall, rise higher) and records, per
// interval: throughput per model, GPUs in use, sum of partition shares,
// SLO violations, swaps (new proxy processes) and the host's CPU use.
// Devices and swaps come from the backends' Health RPC, sampled twice a
// second; requests from an open-loop Poisson LoadGenerator.
class ScenarioRunner {
 public:
  struct Options {
    std::string frontend;               // host:port
    std::vector<std::string> backends;  // host:port of each backend
    // The backends' cluster token (sent with the Health calls).
    SharedSecret cluster_secret;
    // Base rate (req/s, cluster time) and SLO (ms, cluster time) per model.
    std::map<std::string, double> base_rates;
    std::map<std::string, double> slo_ms;
    // (from time, multiplier of the base rates), ascending.
    std::vector<std::pair<absl::Duration, double>> schedule;
    absl::Duration duration = absl::Seconds(60);
    absl::Duration interval = absl::Seconds(5);
    bool shape_only = true;
    uint64_t seed = 1;
  };

  struct Interval {
    absl::Duration start;
    double multiplier = 0;
    std::map<std::string, double> ok_rps;  // answered OK, per model
    int64_t requests = 0;
    int64_t violations = 0;  // errors or later than the SLO
    double gpus_mean = 0;
    int gpus_max = 0;
    double share_sum_mean = 0;  // percent
    int64_t swaps = 0;
    double host_cpu_percent = 0;  // all cores, 100 = every core busy
    double violation_percent() const {
      return requests == 0 ? 0 : 100.0 * violations / requests;
    }
  };
  struct Report {
    std::vector<Interval> intervals;
    int64_t sent = 0, lost = 0;
  };

  // Parses "t0:m0,t1:m1,..." (seconds:multiplier).
  static absl::StatusOr<std::vector<std::pair<absl::Duration, double>>>
  ParseSchedule(const std::string& text);

  static absl::StatusOr<Report> Run(const Options& options);

  // Prints the table (rates and times in cluster units; `time_scale` k
  // converts them to the emulated GPU's in the header note).
  static void Print(const Report& report, const Options& options,
                    double time_scale);
  static absl::Status WriteCsv(const Report& report, const Options& options,
                               const std::string& path);
};

}  // namespace tessera
