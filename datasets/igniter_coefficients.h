#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/igniter_model.h"

namespace tessera {

// iGniter's model inputs for one GPU type, fitted the way the authors'
// scripts fit them (seeds/digests/igniter.md, Sec. 2.4 and 5).
struct IgniterCoefficients {
  IgniterHardware hardware;
  std::map<std::string, IgniterWorkload> workloads;
  // What the file lacked and how it was handled (e.g. a missing kernel
  // count switches that workload's scheduling-growth term off).
  std::vector<std::string> notes;
};

// Reads `coefficients.jsonl` of iGniter's public V100 data (see
// shared/data/README.md) at run time and fits:
//  * hardware: alpha_sch, beta_sch from the per-kernel gaps of 1..5
//    co-running copies (normalised by f/F, minus the solo gap, linear in N
//    over N = 2..5); alpha_f from the throttled runs against a demand
//    extrapolated with the mean per-copy power of the unthrottled runs
//    (pitfall P5), through f = F at the cap;
//  * per workload: k1..k5 (FitActiveTime) on the 3x3 solo grid, batch
//    {1, 16, 32} x share {10, 50, 100} %, active time = latency * f/F -
//    solo scheduling delay; power above idle linear in ability on the
//    unthrottled cells; L2 utilisation linear in ability on the grid's
//    diagonal (1, 10 %), (16, 50 %), (32, 100 %); alpha_cache from two
//    identical copies at batch 1.
absl::StatusOr<IgniterCoefficients> LoadIgniterCoefficients(
    const std::string& path);

}  // namespace tessera
