#include "sim/rules_study.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/policy_registry.h"

namespace tessera {

std::vector<RulesStudy::CaseOutcome> RulesStudy::Run(
    const std::string& policy, const PolicyOptions& policy_options,
    const std::vector<SuiteCase>& cases) const {
  std::vector<CaseOutcome> out;
  auto p = PolicyRegistry::Create(policy, policy_options);
  for (const SuiteCase& c : cases) {
    CaseOutcome o;
    o.label = c.label();
    if (!p.ok()) {
      o.refused = true;
      out.push_back(o);
      continue;
    }
    const ClusterSnapshot snap =
        MakeV100Snapshot(*setup_, options_.gpus, c.workload,
                         options_.base_rate_rps, c.slo_factor);
    const ClusterSimulator sim(setup_->truth.get(), Configs(snap));
    const SearchResult r =
        SearchMaxThroughput(**p, snap, sim, options_.sim, 0.01);
    o.max_rps = r.max_throughput_rps;
    o.limit = r.limit;
    o.refused = r.best.scale == 0 && r.limit == SearchResult::Limit::kRefused;
    if (options_.efficiency) {
      o.efficiency = PlannerEfficiency(r, snap, sim, options_.sim, 0.01);
    }
    out.push_back(o);
  }
  return out;
}

RulesStudy::Summary RulesStudy::Summarise(
    const std::vector<CaseOutcome>& outcomes) {
  Summary s;
  double sum = 0;
  for (const CaseOutcome& o : outcomes) {
    ++s.cases;
    s.total_rps += o.max_rps;
    if (o.limit == SearchResult::Limit::kViolated) ++s.broken;
    if (o.refused) ++s.refused;
    if (o.efficiency > 0) {
      s.min_efficiency = s.measured == 0
                             ? o.efficiency
                             : std::min(s.min_efficiency, o.efficiency);
      s.max_efficiency = std::max(s.max_efficiency, o.efficiency);
      sum += o.efficiency;
      ++s.measured;
    }
  }
  if (s.measured > 0) s.mean_efficiency = sum / s.measured;
  return s;
}

const std::vector<RulesAddition>& TesseraAdditions() {
  static const auto* const additions = new std::vector<RulesAddition>{
      {"latency headroom",
       {"sbp", "greedy", "gpulet-noint", "gpulet"},
       "shared { latency_headroom: 1.0 }"},
      {"rate headroom",
       {"sbp", "greedy", "gpulet-noint", "gpulet"},
       "shared { rate_headroom: 1.0 }"},
      {"whole-GPU latency headroom 1.05 (not 1.1)",
       {"sbp", "greedy", "gpulet-noint", "gpulet"},
       "shared { whole_gpu_latency_headroom: 1.1 }"},
      {"latency headroom", {"igniter"}, "igniter { latency_headroom: 1.0 }"},
      {"whole-GPU batch-1 latency headroom 1.05 (not 1.1)",
       {"igniter"},
       "igniter { whole_gpu_batch1_latency_headroom: 1.1 }"},
      {"rate headroom (opt-in)",
       {"igniter"},
       "igniter { rate_headroom: 1.1 }",
       /*opt_in=*/true},
      {"latency headroom", {"las"}, "las { latency_headroom: 1.0 }"},
      {"rate headroom (opt-in)",
       {"las"},
       "las { rate_headroom: 1.1 }",
       /*opt_in=*/true},
      {"latency headroom (opt-in)",
       {"inss"},
       "inss { latency_headroom: 1.1 }",
       /*opt_in=*/true},
      {"rate headroom (opt-in)",
       {"inss"},
       "inss { rate_headroom: 1.1 }",
       /*opt_in=*/true},
      {"queueing bound (tail wait)",
       {"sbp", "greedy", "gpulet-noint", "gpulet"},
       "shared { queueing_check: false }"},
      {"burst caps (and with them the burst bound)",
       {"sbp", "greedy", "gpulet-noint", "gpulet"},
       "shared { burst_caps: false }"},
      {"burst bound",
       {"sbp", "greedy", "gpulet-noint", "gpulet", "igniter", "las", "inss"},
       "shared { burst_bound: false }"},
      {"bulk-queue wait of fixed batches",
       {"igniter", "las", "inss"},
       "shared { bulk_queue_wait: false }"},
      {"round-robin spacing of batch-1 replicas",
       {"igniter", "las"},
       "shared { round_robin_arrivals: false }"},
      {"batch queue of fixed batches",
       {"igniter", "las"},
       "shared { lone_batch_queue: false }"},
      {"dispatcher's expiry in the batch-1 queue",
       {"igniter"},
       "shared { lone_queue_expiry: false }"},
      {"dispatcher's queue from cap 2 on whole GPUs",
       {"sbp", "greedy", "gpulet-noint", "gpulet"},
       "shared { lone_queue_dispatcher: false }"},
      {"merge attempts capped at 8",
       {"gpulet-noint", "gpulet"},
       "gpulet { merge_attempts: 0 }"},
      {"residue slack 1 req/s",
       {"gpulet-noint", "gpulet"},
       "gpulet { residue_slack_rps: 0.001 }"},
      {"occupancy-weighted interference (opt-in)",
       {"gpulet"},
       "gpulet { occupancy_weighted_interference: true }",
       /*opt_in=*/true},
      {"leftover fill (opt-in)",
       {"gpulet"},
       "gpulet { leftover_fill: true }",
       /*opt_in=*/true},
      {"interference within the headroom",
       {"gpulet"},
       "gpulet { interference_within_headroom: false }"},
      {"a 1.03 headroom on the interference factor (opt-in)",
       {"gpulet"},
       "gpulet { interference_within_headroom: false interference_headroom: "
       "1.03 }",
       /*opt_in=*/true},
      {"the per-share knee after a failed pass",
       {"gpulet-noint", "gpulet"},
       "gpulet { knee_rule: GPULET_KNEE_RULE_ARTIFACT }"},
      {"one gpulet where it is less share than the saturated split",
       {"gpulet-noint", "gpulet"},
       "gpulet { one_gpulet_when_smaller: false }"},
      {"the per-share knee alone (opt-in)",
       {"gpulet-noint", "gpulet"},
       "gpulet { knee_rule: GPULET_KNEE_RULE_PER_SHARE }",
       /*opt_in=*/true},
      {"replicas", {"igniter"}, "igniter { replicas: false }"},
      {"ALLOC queueing check",
       {"igniter"},
       "igniter { queueing_check: false }"},
      {"latency floor", {"igniter"}, "igniter { latency_floor: false }"},
      {"tail wait (not Eq. 6's mean)", {"las"}, "las { tail_wait: false }"},
      {"tail wait in the SLO check only (opt-in)",
       {"las"},
       "las { tail_wait_slo_only: true }",
       /*opt_in=*/true},
      {"collection time (opt-in)",
       {"las"},
       "las { collection_time: true }",
       /*opt_in=*/true},
      {"interfered queue (opt-in)",
       {"las"},
       "las { interfered_queue: true }",
       /*opt_in=*/true},
      {"replicas", {"las"}, "las { replicas: false }"},
      {"fill wait in BDA", {"inss"}, "inss { fill_wait: false }"},
      {"BDA-guided repair", {"inss"}, "inss { bda_repair: false }"},
  };
  return *additions;
}

const std::vector<CalibrationFamily>& CalibrationFamilies() {
  static const auto* const families = [] {
    auto* f = new std::vector<CalibrationFamily>();
    CalibrationFamily solver{
        "shared solver", {"sbp", "greedy", "gpulet"}, {}, {"gpulet-noint"}};
    for (const char* tails :
         {"burst_bound: false round_queueing_tail: 0.01", "burst_tail: 0.001",
          "burst_tail: 0.0005", "burst_tail: 0.0002", "burst_tail: 0.0001"}) {
      for (const char* h : {"1.0", "1.05", "1.1"}) {
        solver.settings.push_back(absl::StrCat(
            "shared { ", tails, " latency_headroom: ", h,
            " whole_gpu_latency_headroom: ", h, " rate_headroom: ", h, " }"));
      }
    }
    f->push_back(solver);
    // Second round: a whole-GPU gpulet's own latency headroom, on the
    // preset's solver rules.
    CalibrationFamily whole{"whole-GPU latency headroom",
                            {"sbp", "greedy", "gpulet"},
                            {},
                            {"gpulet-noint"}};
    for (const char* h : {"1.0", "1.05", "1.1"}) {
      whole.settings.push_back(
          absl::StrCat("shared { whole_gpu_latency_headroom: ", h, " }"));
    }
    f->push_back(whole);
    for (const char* family : {"igniter", "las", "inss"}) {
      CalibrationFamily one{family, {family}, {}};
      for (const char* h : {"1.0", "1.05", "1.1", "1.15", "1.2"}) {
        one.settings.push_back(absl::StrCat(family, " { latency_headroom: ", h,
                                            " rate_headroom: ", h, " }"));
      }
      f->push_back(one);
    }
    return f;
  }();
  return *families;
}

}  // namespace tessera
