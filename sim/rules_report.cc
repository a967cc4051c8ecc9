#include "sim/rules_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "scheduler/planning_rules.h"

namespace tessera {
namespace {

std::string LimitMark(const RulesStudy::CaseOutcome& o) {
  if (o.refused) return "refused";
  std::string s =
      absl::StrFormat("%.1f%s", o.max_rps,
                      o.limit == SearchResult::Limit::kViolated ? "v" : "");
  if (o.efficiency > 0) absl::StrAppendFormat(&s, " e%.2f", o.efficiency);
  return s;
}

}  // namespace

std::vector<SuiteCase> SuiteHalf(const std::string& half) {
  std::vector<SuiteCase> cases;
  for (const SuiteCase& c : RulesSuite()) {
    if (half == "all" || (half == "calibration") == c.calibration) {
      cases.push_back(c);
    }
  }
  return cases;
}

RulesStudy::Options RulesReport::StudyWithEfficiency(bool efficiency) const {
  RulesStudy::Options o = options_.study;
  o.efficiency = efficiency;
  return o;
}

void RulesReport::PrintSummaryRow(const std::string& policy,
                                  const std::string& setting,
                                  const RulesStudy::Summary& s,
                                  double baseline) const {
  std::fprintf(out_, "%-13s %-34s %10.1f %8s %7d/%-3d %7d", policy.c_str(),
               setting.c_str(), s.total_rps,
               baseline > 0 ? absl::StrFormat(
                                  "%+.1f%%", 100 * (s.total_rps / baseline - 1))
                                  .c_str()
                            : "",
               s.broken, s.cases, s.refused);
  if (s.measured > 0) {
    std::fprintf(out_, "  %.2f / %.2f / %.2f", s.min_efficiency,
                 s.mean_efficiency, s.max_efficiency);
  }
  std::fprintf(out_, "\n");
  std::fflush(out_);
}

void RulesReport::PrintSummaryHeader(const std::string& what) const {
  std::fprintf(out_, "\n%s\n%-13s %-34s %10s %8s %11s %7s%s\n", what.c_str(),
               "policy", "setting", "sum req/s", "vs base", "broken", "refused",
               options_.study.efficiency ? "  efficiency min/mean/max" : "");
}

void RulesReport::Checks() const {
  const RulesStudy study(setup_, options_.study);
  struct Column {
    std::string header, policy, override_text;
  };
  const std::string check = "gpulet { interference_check: ";
  const std::vector<Column> columns = {
      {"gpulet-noint", "gpulet-noint", ""},
      {"gpulet:paper", "gpulet", check + "GPULET_INTERFERENCE_CHECK_PAPER }"},
      {"gpulet:artifact", "gpulet",
       check + "GPULET_INTERFERENCE_CHECK_ARTIFACT }"},
      {"gpulet:strict", "gpulet", check + "GPULET_INTERFERENCE_CHECK_STRICT }"},
      {"sbp", "sbp", ""},
      {"ideal-layout", "ideal-layout", ""}};
  for (double slo : options_.slo_factors) {
    std::vector<SuiteCase> cases;
    for (const Workload& w : V100Workloads()) {
      if (w.name.rfind("game-small", 0) == 0) continue;
      cases.push_back({w, slo, false});
    }
    std::vector<std::vector<RulesStudy::CaseOutcome>> results;
    for (const Column& c : columns) {
      PolicyOptions o = options_.policy;
      auto rules = RulesFromFlags(
          options_.rules_preset,
          std::vector<std::string>{options_.rules_override, c.override_text});
      if (!rules.ok()) {
        std::fprintf(stderr, "%s\n", rules.status().ToString().c_str());
        return;
      }
      o.rules = *rules;
      results.push_back(study.Run(c.policy, o, cases));
    }
    std::fprintf(
        out_,
        "\ngpulet's interference checks, SLO %.0fx, rules %s (req/s; v: "
        "the next load's plan broke; e: planner efficiency)\n%-26s",
        slo, DescribeRules(options_.policy.rules).c_str(), "workload");
    for (const Column& c : columns)
      std::fprintf(out_, " %17s", c.header.c_str());
    std::fprintf(out_, "\n");
    for (size_t i = 0; i < cases.size(); ++i) {
      std::fprintf(out_, "%-26s", cases[i].workload.name.c_str());
      for (size_t k = 0; k < columns.size(); ++k) {
        std::fprintf(out_, " %17s", LimitMark(results[k][i]).c_str());
      }
      std::fprintf(out_, "\n");
    }
    std::fprintf(out_, "%-26s", "total");
    for (size_t k = 0; k < columns.size(); ++k) {
      std::fprintf(out_, " %17.1f",
                   RulesStudy::Summarise(results[k]).total_rps);
    }
    std::fprintf(out_, "\n");
    std::fflush(out_);
  }
}

void RulesReport::Additions() const {
  const std::string half = options_.suite_half;
  const std::vector<SuiteCase> cases = SuiteHalf(half);
  const RulesStudy study(setup_, options_.study);
  PrintSummaryHeader(absl::StrFormat(
      "Tessera's additions, each switched off (rules suite, %s: %d cases, "
      "%d V100s; broken: limits where an accepted plan broke 1 %%)",
      half, cases.size(), options_.study.gpus));
  for (absl::string_view name : absl::StrSplit(options_.policies, ',')) {
    const std::string policy(name);
    if (policy == "ideal" || policy == "ideal-layout") continue;
    PolicyOptions o = options_.policy;
    o.rules = PresetRules(RULES_PRESET_TESSERA);
    const auto base = RulesStudy::Summarise(study.Run(policy, o, cases));
    PrintSummaryRow(policy, "tessera (every addition on)", base, 0);
    for (const RulesAddition& a : TesseraAdditions()) {
      if (std::find(a.policies.begin(), a.policies.end(), policy) ==
          a.policies.end()) {
        continue;
      }
      o.rules = *RulesFromFlags("tessera", a.off);
      PrintSummaryRow(policy, (a.opt_in ? "with " : "without ") + a.name,
                      RulesStudy::Summarise(study.Run(policy, o, cases)),
                      base.total_rps);
    }
    o.rules = PresetRules(RULES_PRESET_PAPER);
    PrintSummaryRow(policy, "paper (every addition off)",
                    RulesStudy::Summarise(study.Run(policy, o, cases)),
                    base.total_rps);
  }
}

void RulesReport::Suite() const {
  const std::vector<SuiteCase> cases = SuiteHalf(options_.suite_half);
  const RulesStudy study(setup_, options_.study);
  PrintSummaryHeader(absl::StrFormat("Rules suite, %s (%d cases), rules %s",
                                     options_.suite_half, cases.size(),
                                     DescribeRules(options_.policy.rules)));
  for (absl::string_view name : absl::StrSplit(options_.policies, ',')) {
    const std::string policy(name);
    if (policy == "ideal") continue;
    const auto outcomes = study.Run(policy, options_.policy, cases);
    PrintSummaryRow(policy, "", RulesStudy::Summarise(outcomes), 0);
    for (const auto& o : outcomes) {
      if (o.limit == SearchResult::Limit::kViolated) {
        std::fprintf(out_, "    broken at the limit: %s (%s)\n",
                     o.label.c_str(), LimitMark(o).c_str());
      }
    }
  }
}

namespace {

bool IsOracle(const std::string& policy) {
  return policy == "ideal" || policy == "ideal-layout";
}

// The highest SLO-preserved max of case `i` among `policies` passing
// `keep`, and that policy's name.
template <typename Keep>
std::pair<double, std::string> BestOf(
    const std::vector<std::string>& policies,
    const std::vector<std::vector<RulesStudy::CaseOutcome>>& results, size_t i,
    Keep keep) {
  std::pair<double, std::string> best{0, "-"};
  for (size_t k = 0; k < policies.size(); ++k) {
    if (!keep(policies[k]) || results[k][i].refused) continue;
    if (results[k][i].max_rps > best.first) {
      best = {results[k][i].max_rps, policies[k]};
    }
  }
  return best;
}

}  // namespace

void RulesReport::PrintLimits(
    const std::vector<std::string>& policies,
    const std::vector<std::vector<RulesStudy::CaseOutcome>>& results) const {
  for (size_t k = 0; k < policies.size(); ++k) {
    const auto s = RulesStudy::Summarise(results[k]);
    std::fprintf(out_, "%s: %d of %d limits broken, %d refused every load",
                 policies[k].c_str(), s.broken, s.cases, s.refused);
    if (s.measured > 0) {
      std::fprintf(out_, ", efficiency %.2f / %.2f / %.2f", s.min_efficiency,
                   s.mean_efficiency, s.max_efficiency);
    }
    std::fprintf(out_, "\n");
  }
}

void RulesReport::Compare() const {
  const std::vector<SuiteCase> cases = SuiteHalf(options_.suite_half);
  const RulesStudy study(setup_, options_.study);
  std::vector<std::string> policies;
  for (absl::string_view name : absl::StrSplit(options_.policies, ',')) {
    if (name != "ideal") policies.emplace_back(name);
  }
  std::vector<std::vector<RulesStudy::CaseOutcome>> results;
  for (const std::string& policy : policies) {
    std::fprintf(stderr, "compare: %s over %zu cases\n", policy.c_str(),
                 cases.size());
    results.push_back(study.Run(policy, options_.policy, cases));
  }
  const auto tessera_it =
      std::find(policies.begin(), policies.end(), "tessera");
  const bool has_tessera = tessera_it != policies.end();
  const size_t t = tessera_it - policies.begin();
  std::fprintf(out_,
               "\nPer case, %s (%zu cases, %d V100s), rules %s (SLO-preserved "
               "max req/s; v: the next load's plan broke; e: planner "
               "efficiency)\n%-30s",
               options_.suite_half.c_str(), cases.size(), options_.study.gpus,
               DescribeRules(options_.policy.rules).c_str(), "case");
  for (const std::string& p : policies) std::fprintf(out_, " %14s", p.c_str());
  std::fprintf(out_, " %12s %12s%s\n", "best seed", "best known",
               has_tessera ? "   tessera/seed  tessera/known" : "");
  int at_least_every_seed = 0, within_2 = 0, seed_within_2 = 0;
  double gain_sum = 0;
  std::vector<double> totals(policies.size(), 0);
  for (size_t i = 0; i < cases.size(); ++i) {
    std::fprintf(out_, "%-30s", cases[i].label().c_str());
    for (size_t k = 0; k < policies.size(); ++k) {
      std::fprintf(out_, " %14s", LimitMark(results[k][i]).c_str());
      if (!results[k][i].refused) totals[k] += results[k][i].max_rps;
    }
    const auto seed = BestOf(policies, results, i, [](const std::string& p) {
      return !IsOracle(p) && p != "tessera";
    });
    const auto known =
        BestOf(policies, results, i, [](const std::string&) { return true; });
    std::fprintf(out_, " %12.1f %12.1f", seed.first, known.first);
    if (has_tessera) {
      const double mine = results[t][i].refused ? 0 : results[t][i].max_rps;
      const double vs_seed = seed.first > 0 ? mine / seed.first : 1;
      const double vs_known = known.first > 0 ? mine / known.first : 1;
      at_least_every_seed += mine >= seed.first - 1e-9 ? 1 : 0;
      within_2 += vs_known >= 0.98 ? 1 : 0;
      seed_within_2 +=
          (known.first <= 0 || seed.first / known.first >= 0.98) ? 1 : 0;
      gain_sum += vs_seed - 1;
      std::fprintf(out_, " %10.3f (%s) %8.3f", vs_seed, seed.second.c_str(),
                   vs_known);
    }
    std::fprintf(out_, "\n");
  }
  std::fprintf(out_, "%-30s", "total");
  for (double total : totals) std::fprintf(out_, " %14.1f", total);
  std::fprintf(out_, "\n");
  PrintLimits(policies, results);
  const bool has_seed = std::any_of(
      policies.begin(), policies.end(),
      [](const std::string& p) { return !IsOracle(p) && p != "tessera"; });
  if (has_tessera && has_seed && !cases.empty()) {
    std::fprintf(out_,
                 "tessera: >= every seed policy on %d of %zu cases, >= 0.98 "
                 "of best known on %d, mean gain over the best seed %+.1f%% "
                 "(the best seed itself within 2%% of best known on %d)\n",
                 at_least_every_seed, cases.size(), within_2,
                 100 * gain_sum / cases.size(), seed_within_2);
  }
  std::fflush(out_);
}

void RulesReport::Calibrate() const {
  const std::vector<SuiteCase> calibration = SuiteHalf("calibration");
  const std::vector<SuiteCase> held_out = SuiteHalf("held-out");
  std::fprintf(out_, "\nCalibration half (%zu cases):", calibration.size());
  for (const SuiteCase& c : calibration)
    std::fprintf(out_, " [%s]", c.label().c_str());
  std::fprintf(out_, "\nHeld-out half (%zu cases):", held_out.size());
  for (const SuiteCase& c : held_out)
    std::fprintf(out_, " [%s]", c.label().c_str());
  std::fprintf(out_, "\n");
  const RulesStudy study(setup_, StudyWithEfficiency(false));
  std::vector<std::string> chosen;  // one override per family
  std::vector<std::string> policies;
  for (const CalibrationFamily& family : CalibrationFamilies()) {
    PrintSummaryHeader("Calibration: " + family.name);
    std::string best;
    double best_total = -1;
    for (const std::string& setting : family.settings) {
      auto rules = RulesFromFlags("tessera", setting);
      if (!rules.ok()) {
        std::fprintf(stderr, "%s\n", rules.status().ToString().c_str());
        return;
      }
      PolicyOptions o = options_.policy;
      o.rules = *rules;
      double total = 0;
      int broken = 0;
      for (const std::string& policy : family.policies) {
        const auto s = RulesStudy::Summarise(study.Run(policy, o, calibration));
        PrintSummaryRow(policy, setting, s, 0);
        total += s.total_rps;
        broken += s.broken;
      }
      for (const std::string& policy : family.reported) {
        PrintSummaryRow(
            policy + " (not qualifying)", setting,
            RulesStudy::Summarise(study.Run(policy, o, calibration)), 0);
      }
      if (broken == 0 && total > best_total) {
        best_total = total;
        best = setting;
      }
    }
    std::fprintf(out_, "chosen for %s: %s\n", family.name.c_str(),
                 best.empty() ? "(none holds)" : best.c_str());
    if (!best.empty()) chosen.push_back(best);
    for (const auto* list : {&family.policies, &family.reported}) {
      for (const std::string& p : *list) {
        if (std::find(policies.begin(), policies.end(), p) == policies.end()) {
          policies.push_back(p);
        }
      }
    }
  }
  std::fprintf(out_, "\nCalibrated rules: tessera + %s\n",
               absl::StrJoin(chosen, " ").c_str());
  const RulesStudy check(setup_, StudyWithEfficiency(true));
  PrintSummaryHeader("Held-out half: calibrated vs today's tessera");
  for (const std::string& policy : policies) {
    PolicyOptions o = options_.policy;
    o.rules = PresetRules(RULES_PRESET_TESSERA);
    const auto today = RulesStudy::Summarise(check.Run(policy, o, held_out));
    PrintSummaryRow(policy, "tessera today", today, 0);
    auto calibrated = RulesFromFlags("tessera", chosen);
    if (!calibrated.ok()) {
      std::fprintf(stderr, "%s\n", calibrated.status().ToString().c_str());
      return;
    }
    o.rules = *calibrated;
    PrintSummaryRow(policy, "calibrated",
                    RulesStudy::Summarise(check.Run(policy, o, held_out)),
                    today.total_rps);
  }
}

}  // namespace tessera
