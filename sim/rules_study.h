#pragma once

#include <string>
#include <vector>

#include "scheduler/scheduling_policy.h"
#include "sim/throughput_search.h"
#include "sim/v100_workload.h"
#include "sim/workload_suite.h"

namespace tessera {

// Measures policies under planning rules over cases of the rules suite
// (workload_suite.h) on the V100 ground truth: the SLO-preserved max
// throughput of each case, what ended it, and optionally the planner
// efficiency there (MEASURES.md).
class RulesStudy {
 public:
  struct Options {
    int gpus = 4;
    double base_rate_rps = 100;  // per model, before scaling
    SimOptions sim;
    bool efficiency = false;
  };
  struct CaseOutcome {
    std::string label;
    double max_rps = 0;
    SearchResult::Limit limit = SearchResult::Limit::kNone;
    bool refused = false;   // the policy refused every load (or errored)
    double efficiency = 0;  // 0: not measured
  };
  struct Summary {
    double total_rps = 0;
    int cases = 0;
    int broken = 0;    // limits where an accepted plan broke
    int refused = 0;   // cases the policy could not plan at all
    int measured = 0;  // cases with an efficiency
    double min_efficiency = 0, mean_efficiency = 0, max_efficiency = 0;
  };

  RulesStudy(const V100Setup* setup, Options options)
      : setup_(setup), options_(std::move(options)) {}

  std::vector<CaseOutcome> Run(const std::string& policy,
                               const PolicyOptions& policy_options,
                               const std::vector<SuiteCase>& cases) const;
  static Summary Summarise(const std::vector<CaseOutcome>& outcomes);

 private:
  const V100Setup* setup_;
  Options options_;
};

// One of Tessera's additions to a paper's rules: the policies it applies
// to and the PlanningRules text that switches it off from "tessera" (or,
// for an opt-in addition that "tessera" leaves off, on).
struct RulesAddition {
  std::string name;
  std::vector<std::string> policies;
  std::string off;
  bool opt_in = false;
};
const std::vector<RulesAddition>& TesseraAdditions();

// What the calibration varies: per policy family, the PlanningRules
// settings (text overriding "tessera") tried on the suite's calibration
// half. The shared solver's family varies the two queueing tails and its
// headroom; igniter, las and inss their own headroom.
struct CalibrationFamily {
  std::string name;
  // The policies whose plans must all hold for a setting to qualify.
  std::vector<std::string> policies;
  std::vector<std::string> settings;
  // Run and reported beside them, but not qualifying: gpulet-noint, the
  // gpulet paper's ablation without its interference model, whose plans
  // are expected to break where interference matters (its margins are
  // not calibrated to absorb what it ignores by design).
  std::vector<std::string> reported = {};
};
const std::vector<CalibrationFamily>& CalibrationFamilies();

}  // namespace tessera
