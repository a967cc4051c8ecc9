#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"
#include "sim/throughput_search.h"
#include "sim/v100_workload.h"
#include "sim/workload_suite.h"

namespace tessera {

// What a policy's incremental re-planning gives up for the gpulets it
// does not move, measured in the ground truth. Per case of the rules
// suite: the policy plans rates r0 (`load` x the rates of its
// SLO-preserved maximum), then `changes` new rate mixes r1 (each model's
// r0 times a factor drawn from [1 - spread, 1 + spread]), each planned
// twice: with r0's plan in force (incremental) and with none (from
// scratch). For each the study counts the gpulets new against r0's plan
// and measures the throughput the returned plan holds (PlanHoldScale:
// the largest multiple of r1 it serves with <= 1 % violations per model),
// re-batched for each load as the frontend serves a kept plan, and with
// the batches planned for r1.
class ReplanStudy {
 public:
  struct Options {
    int gpus = 4;
    double base_rate_rps = 100;  // per model, before scaling
    SimOptions sim;
    double load = 0.5;
    double spread = 0.5;
    int changes = 4;
    uint32_t seed = 2026;
  };
  struct Change {
    bool kept = false;      // the incremental plan is the plan in force
    bool repaired = false;  // ... repaired (PlanRepair)
    int moved_incremental = 0, moved_scratch = 0;
    // Largest multiple of r1 each plan holds (0: not even r1), re-batched
    // for each load by the shared check as the frontend serves a kept
    // plan (PlanCheck::Rebatch) ...
    double hold_incremental = 0, hold_scratch = 0;
    // ... and with the batches planned for r1.
    double fixed_hold_incremental = 0, fixed_hold_scratch = 0;
    // The incremental plan's hold over the plan from scratch's (1 when
    // both hold nothing).
    double ratio() const { return Ratio(hold_incremental, hold_scratch); }
    double fixed_ratio() const {
      return Ratio(fixed_hold_incremental, fixed_hold_scratch);
    }
    static double Ratio(double incremental, double scratch);
  };
  struct CaseResult {
    std::string label;
    bool planned = false;  // the policy planned the case at all
    std::vector<Change> changes;
  };

  ReplanStudy(const V100Setup* setup, Options options)
      : setup_(setup), options_(std::move(options)) {}

  absl::StatusOr<std::vector<CaseResult>> Run(
      const std::string& policy, const PolicyOptions& policy_options,
      const std::vector<SuiteCase>& cases) const;
  // Per case and in all: re-plans, plans kept, gpulets new and the
  // worst and mean hold ratio.
  static void Print(const std::vector<CaseResult>& results, FILE* out);

 private:
  CaseResult RunCase(const SchedulingPolicy& policy,
                     const PolicyOptions& policy_options, const SuiteCase& c,
                     uint32_t seed) const;

  const V100Setup* setup_;
  Options options_;
};

}  // namespace tessera
