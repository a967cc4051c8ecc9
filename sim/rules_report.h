#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "scheduler/scheduling_policy.h"
#include "sim/rules_study.h"
#include "sim/v100_workload.h"
#include "sim/workload_suite.h"

namespace tessera {

// The rules suite's cases of one half: "all", "calibration" or "held-out"
// (any other value: the held-out half).
std::vector<SuiteCase> SuiteHalf(const std::string& half);

// The planning-rules experiments of tessera_experiments, printed as
// tables (docs/planning-rules.md):
//  * Checks: gpulet's three interference checks beside gpulet-noint, sbp
//    and ideal-layout on the nine V100 workloads, per SLO factor;
//  * Additions: each of Tessera's additions switched off (or an opt-in
//    on), per policy, over the suite;
//  * Suite: every policy under the given rules over one half;
//  * Calibrate: each family's margins on the calibration half, checked on
//    the held-out half;
//  * Compare: every policy per case of one half, against the best
//    non-oracle policy and the best known (MEASURES.md), with "tessera"'s
//    gain over the best seed policy when it is among the policies.
class RulesReport {
 public:
  struct Options {
    RulesStudy::Options study;
    // Every policy plans with these (rules included: the preset and the
    // override below, resolved).
    PolicyOptions policy;
    // What the rules came from, for Checks' per-column overrides.
    std::string rules_preset = "tessera";
    std::string rules_override;
    std::vector<double> slo_factors = {3, 5, 10};
    std::string policies;  // comma-separated
    std::string suite_half = "all";
  };

  // `setup` must outlive the report.
  RulesReport(const V100Setup* setup, Options options, std::FILE* out)
      : setup_(setup), options_(std::move(options)), out_(out) {}

  void Checks() const;
  void Additions() const;
  void Suite() const;
  void Calibrate() const;
  void Compare() const;

 private:
  RulesStudy::Options StudyWithEfficiency(bool efficiency) const;
  void PrintSummaryHeader(const std::string& what) const;
  // Per policy: broken limits, refusals and planner efficiency.
  void PrintLimits(
      const std::vector<std::string>& policies,
      const std::vector<std::vector<RulesStudy::CaseOutcome>>& results) const;
  void PrintSummaryRow(const std::string& policy, const std::string& setting,
                       const RulesStudy::Summary& s, double baseline) const;

  const V100Setup* setup_;
  Options options_;
  std::FILE* out_;
};

}  // namespace tessera
