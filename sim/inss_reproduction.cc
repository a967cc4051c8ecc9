#include "sim/inss_reproduction.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "scheduler/inss_workload_sampler.h"
#include "scheduler/policy_registry.h"
#include "sim/throughput_search.h"
#include "sim/workload_suite.h"

namespace tessera {
namespace {

// The six-model mix of workload_suite.h.
std::vector<std::string> SixModels() {
  for (const Workload& w : V100Workloads()) {
    if (w.name.rfind("six", 0) == 0) return w.models;
  }
  return {};
}

const InssReproduction::PolicyRow* Row(const InssReproduction::SloResult& s,
                                       const std::string& policy) {
  for (const auto& r : s.rows) {
    if (r.policy == policy) return &r;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<InssReproduction::Result> InssReproduction::Run(
    const PolicyOptions& base) const {
  const auto ref_it = std::find(options_.policies.begin(),
                                options_.policies.end(), options_.reference);
  if (ref_it == options_.policies.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the InSS reproduction's loads are fractions of ",
                     options_.reference, "'s maximum: list it"));
  }
  const size_t ref = ref_it - options_.policies.begin();
  std::vector<std::unique_ptr<SchedulingPolicy>> policies;
  for (const std::string& name : options_.policies) {
    ASSIGN_OR_RETURN(auto p, PolicyRegistry::Create(name, base));
    policies.push_back(std::move(p));
  }
  const std::vector<std::string> names =
      options_.models.empty() ? SixModels() : options_.models;
  if (!options_.rate_weights.empty() &&
      options_.rate_weights.size() != names.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the InSS reproduction has ", names.size(), " models and ",
                     options_.rate_weights.size(), " rate weights"));
  }
  std::vector<WorkloadModel> models;
  double base_total = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const double w =
        options_.rate_weights.empty() ? 1 : options_.rate_weights[i];
    models.push_back({names[i], options_.base_rate_rps * w});
    base_total += options_.base_rate_rps * w;
  }
  Result result;
  for (double slo : options_.slo_factors) {
    const ClusterSnapshot snap =
        MakeV100Snapshot(*setup_, options_.gpus, models, slo);
    const ClusterSimulator simulator(setup_->truth.get(), Configs(snap));
    SloResult s;
    s.slo_factor = slo;
    for (size_t k = 0; k < policies.size(); ++k) {
      PolicyRow row;
      row.policy = options_.policies[k];
      row.max_rps =
          SearchMaxThroughput(*policies[k], snap, simulator, options_.sim)
              .max_throughput_rps;
      s.rows.push_back(row);
    }
    s.reference_rps = s.rows[ref].max_rps;
    for (double f : options_.load_fractions) {
      s.loads_rps.push_back(f * s.reference_rps);
    }
    for (size_t k = 0; k < policies.size(); ++k) {
      PolicyRow& row = s.rows[k];
      int64_t arrived = 0, late = 0, dropped = 0;
      for (double load : s.loads_rps) {
        if (load <= 0) continue;
        const ScaleOutcome o =
            EvaluateScale(*policies[k], snap, simulator, options_.sim,
                          load / base_total, /*overload=*/true);
        const int n = static_cast<int>(s.loads_rps.size());
        row.served_rps.push_back(0);
        row.violation_pct.push_back(100);
        if (!o.schedulable) {  // nothing served at all
          row.dropped_pct += 100.0 / n;
          continue;
        }
        int64_t a = 0, c = 0, l = 0, d = 0;
        for (const ModelResult& m : o.sim.models) {
          a += m.arrived;
          c += m.completed;
          l += m.late;
          d += m.dropped;
          arrived += m.arrived;
          late += m.late;
          dropped += m.dropped;
        }
        if (a == 0) continue;
        if (load == s.loads_rps.back()) {
          for (const ModelResult& m : o.sim.models) {
            if (m.violation_fraction() > row.worst_model_violation) {
              row.worst_model = m.model;
              row.worst_model_violation = m.violation_fraction();
            }
          }
        }
        row.served_rps.back() = load * c / a;
        row.violation_pct.back() = 100.0 * (l + d) / a;
        row.mean_served_rps += load * c / a / n;
        row.mean_goodput_rps += load * (c - l) / a / n;
      }
      if (arrived > 0) {
        // Loads nothing was planned for count as wholly dropped (added
        // above); the rest in proportion to their arrivals.
        const double planned_share = 1 - row.dropped_pct / 100;
        row.late_pct = 100.0 * late / arrived * planned_share;
        row.dropped_pct += 100.0 * dropped / arrived * planned_share;
      }
    }
    result.slos.push_back(std::move(s));
  }
  return result;
}

std::vector<ReproductionClaim> InssReproduction::Verdicts(
    const Result& result) {
  std::vector<ReproductionClaim> claims;
  for (const SloResult& s : result.slos) {
    const PolicyRow* inss = Row(s, "inss");
    if (inss == nullptr) continue;
    const std::string at = absl::StrFormat(" (SLO %.0fx)", s.slo_factor);
    struct Against {
      const char* policy;
      double paper;
    };
    for (const Against& a : {Against{"gpulet", 0.281}, {"igniter", 1.897}}) {
      const PolicyRow* other = Row(s, a.policy);
      if (other == nullptr) continue;
      ReproductionClaim c;
      c.claim = absl::StrCat("InSS's average throughput over ", a.policy,
                             " (Fig. 15)", at);
      c.paper = absl::StrFormat("%+.1f %%", 100 * a.paper);
      const double gain =
          other->mean_served_rps > 0
              ? inss->mean_served_rps / other->mean_served_rps - 1
              : 0;
      const double ours = other->max_rps > 0
                              ? inss->max_rps / other->max_rps - 1
                              : (inss->max_rps > 0 ? INFINITY : 0);
      c.ours = absl::StrFormat(
          "%+.1f %% (%.1f vs %.1f req/s served); SLO-preserved max %+.1f %% "
          "(%.1f vs %.1f)",
          100 * gain, inss->mean_served_rps, other->mean_served_rps, 100 * ours,
          inss->max_rps, other->max_rps);
      c.verdict = ClaimVerdict(gain >= 0.95 * a.paper, gain > 0);
      if (c.verdict != "holds") {
        // Where InSS falls short: the loads it serves least of against
        // the other.
        std::string behind;
        for (size_t i = 0;
             i < s.loads_rps.size() && i < inss->served_rps.size() &&
             i < other->served_rps.size();
             ++i) {
          absl::StrAppendFormat(&behind, "%s%.0f: %.0f vs %.0f",
                                behind.empty() ? "" : ", ", s.loads_rps[i],
                                inss->served_rps[i], other->served_rps[i]);
        }
        c.reason = absl::StrFormat(
            "served per load (req/s offered: inss vs %s) %s; dropped %.1f %% "
            "vs %.1f %%; at the heaviest load inss's worst model is %s "
            "(%.1f %% not served in time), %s's %s (%.1f %%)",
            a.policy, behind, inss->dropped_pct, other->dropped_pct,
            inss->worst_model, 100 * inss->worst_model_violation, a.policy,
            other->worst_model, 100 * other->worst_model_violation);
      } else {
        c.reason = "-";
      }
      claims.push_back(c);
    }
    ReproductionClaim c;
    c.claim = absl::StrCat("InSS's SLO violations (Fig. 17)", at);
    c.paper = "< 1 % (gpulet 4.4 %, iGniter 3.8 %)";
    const PolicyRow* gpulet = Row(s, "gpulet");
    const PolicyRow* igniter = Row(s, "igniter");
    const double v = inss->late_pct + inss->dropped_pct;
    c.ours =
        absl::StrFormat("%.1f %% (gpulet %.1f %%, igniter %.1f %%)", v,
                        gpulet ? gpulet->late_pct + gpulet->dropped_pct : 0,
                        igniter ? igniter->late_pct + igniter->dropped_pct : 0);
    c.verdict = ClaimVerdict(
        v < 1, gpulet != nullptr && v < gpulet->late_pct + gpulet->dropped_pct);
    c.reason = "-";
    if (c.verdict != "holds") {
      c.reason = "violations per load (req/s offered: inss vs gpulet) ";
      for (size_t i = 0;
           i < s.loads_rps.size() && i < inss->violation_pct.size() &&
           gpulet != nullptr && i < gpulet->violation_pct.size();
           ++i) {
        absl::StrAppendFormat(&c.reason, "%s%.0f: %.1f %% vs %.1f %%",
                              i ? ", " : "", s.loads_rps[i],
                              inss->violation_pct[i], gpulet->violation_pct[i]);
      }
    }
    claims.push_back(c);
  }
  return claims;
}

std::string InssReproduction::Describe() const {
  std::vector<std::string> names =
      options_.models.empty() ? SixModels() : options_.models;
  return absl::StrCat(InssWorkloadSampler::Key(names, options_.gpus), " (",
                      names.size(), " models on ", options_.gpus, " V100s)");
}

std::vector<ReproductionClaim> InssReproduction::ActorVerdicts(
    const Result& result, const std::string& label) {
  std::vector<ReproductionClaim> claims;
  for (const SloResult& s : result.slos) {
    const PolicyRow* inss = Row(s, "inss");
    if (inss == nullptr) continue;
    struct Against {
      const char* policy;
      double floor;   // inss / other must reach this
      bool strictly;  // ... and exceed it
      const char* what;
    };
    for (const Against& a :
         {Against{"inss-rr", 1.0, true, "above"},
          Against{"bda-random", 0.95, false, "at least 0.95 of"},
          Against{"inss-ni", 1.0, false, "not below"}}) {
      const PolicyRow* other = Row(s, a.policy);
      if (other == nullptr) continue;
      ReproductionClaim c;
      c.claim = absl::StrFormat("%s, SLO %.0fx: inss %s %s", label,
                                s.slo_factor, a.what, a.policy);
      c.paper = "-";
      // Against nothing, anything is above (and nothing ties).
      auto ratio = [](double ours, double theirs) {
        if (theirs > 0) return ours / theirs;
        return ours > 0 ? std::numeric_limits<double>::infinity() : 1.0;
      };
      const double max_ratio = ratio(inss->max_rps, other->max_rps);
      const double served_ratio =
          ratio(inss->mean_served_rps, other->mean_served_rps);
      c.ours = absl::StrFormat(
          "max %.1f vs %.1f (x%.3f); served %.1f vs %.1f (x%.3f); "
          "violations %.1f %% vs %.1f %%",
          inss->max_rps, other->max_rps, max_ratio, inss->mean_served_rps,
          other->mean_served_rps, served_ratio,
          inss->late_pct + inss->dropped_pct,
          other->late_pct + other->dropped_pct);
      const bool holds = a.strictly
                             ? max_ratio > a.floor && served_ratio > a.floor
                             : max_ratio >= a.floor && served_ratio >= a.floor;
      c.verdict = ClaimVerdict(holds, max_ratio >= 0.9 * a.floor);
      c.reason = "-";
      claims.push_back(c);
    }
  }
  return claims;
}

void InssReproduction::Print(const Result& result, const std::string& rules,
                             const std::vector<ReproductionClaim>& claims,
                             std::FILE* out) const {
  for (const SloResult& s : result.slos) {
    std::fprintf(
        out,
        "\nInSS, %s (Figs. 15, 17), SLO %.0fx "
        "batch-1 latency, rules %s\nfixed loads (req/s, %s's maximum x "
        "{",
        Describe().c_str(), s.slo_factor, rules.c_str(),
        options_.reference.c_str());
    for (size_t i = 0; i < options_.load_fractions.size(); ++i) {
      std::fprintf(out, "%s%.2f", i ? ", " : "", options_.load_fractions[i]);
    }
    std::fprintf(out, "}):");
    for (double l : s.loads_rps) std::fprintf(out, " %.1f", l);
    std::fprintf(out, "\n\n%-10s %12s %14s %12s %10s %10s\n", "policy",
                 "max (ours)", "served (mean)", "in SLO", "late %",
                 "dropped %");
    for (const PolicyRow& r : s.rows) {
      std::fprintf(out, "%-10s %12.1f %14.1f %12.1f %10.2f %10.2f\n",
                   r.policy.c_str(), r.max_rps, r.mean_served_rps,
                   r.mean_goodput_rps, r.late_pct, r.dropped_pct);
    }
  }
  PrintClaims(claims, out);
}

void InssReproduction::AppendCsv(const Result& result, const std::string& rules,
                                 std::string* csv) {
  if (csv->empty()) {
    absl::StrAppend(csv,
                    "rules,slo_factor,policy,max_rps,mean_served_rps,"
                    "mean_goodput_rps,late_pct,dropped_pct\n");
  }
  for (const SloResult& s : result.slos) {
    for (const PolicyRow& r : s.rows) {
      absl::StrAppendFormat(csv, "%s,%.0f,%s,%.1f,%.1f,%.1f,%.3f,%.3f\n", rules,
                            s.slo_factor, r.policy, r.max_rps,
                            r.mean_served_rps, r.mean_goodput_rps, r.late_pct,
                            r.dropped_pct);
    }
  }
}

}  // namespace tessera
