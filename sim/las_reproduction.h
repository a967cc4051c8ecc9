#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/scheduling_policy.h"
#include "sim/cluster_simulator.h"
#include "sim/emulated_workload.h"
#include "sim/ground_truth.h"
#include "sim/reproduction_claim.h"
#include "sim/v100_workload.h"

namespace tessera {

// The KAIST LAS paper's multi-tenant experiment (Experiment C, Figs. 5-7):
// three services on one device, rates [200, 30, 600] req/s and SLOs [50,
// 200, 40] ms for a ResNet, MobileNet-v3 and BERT; LAS (per service a
// batch and a usage ratio p) against partitioning with p = 1 for every
// service, which our system serves as exclusive time sharing of the whole
// device (sbp). The paper reports +15.9 % total throughput.
//
// Scaling to another device (docs/reproduction.md): the paper gives no
// solo latencies, so each SLO keeps its ratio to an assumed solo batch-1
// latency t_i of the service on the paper's GPU:
//   SLO'_i = slo_scale x SLO_i x L'_i(1, 100 %) / t_i,
// L'_i the service's batch-1 latency on our device, and the rates keep
// their ratios: rate'_i = rate_scale x rate_i x L'_ResNet(1, 100 %) / t_ResNet
// (the device's speed relative to the paper's, measured on the ResNet).
// The verdict is checked at slo_scale and rate_scale in {0.8, 1, 1.2}.
//
// Devices (a Setting): the shipped models' CPU profiles on one 2-core
// device (resnet18, mobilenet_v3_small, bert_tiny: the setting),
// and one V100 of iGniter's measurements with the closest measured models
// (resnet50; alexnet for MobileNet-v3, the lightest CNN; vgg19 for BERT,
// the closest in FLOPs), where LAS's one partition per service is
// expressible at the paper's granularity.
class LasReproduction {
 public:
  // One device and the three services' models on it.
  struct Setting {
    std::string name;
    // A snapshot of one device serving `models` (the SLOs are then set
    // by the reproduction).
    std::function<ClusterSnapshot(const std::vector<WorkloadModel>& models)>
        snapshot;
    const GroundTruth* truth = nullptr;
    // The device's interference model, for the policies that plan with
    // one (gpulet's linear form fitted to its pairs).
    std::shared_ptr<const InterferenceModel> interference;
    std::vector<std::string> models;  // ResNet, MobileNet-v3, BERT
    std::vector<double> solo_ms;      // L'_i(1, 100 %)
  };
  struct Options {
    std::vector<std::string> policies = {"las", "sbp", "gpulet"};
    // The assumed solo batch-1 latencies on the paper's GPU (ms).
    std::vector<double> paper_solo_ms = {5, 4, 8};
    std::vector<double> scales = {0.8, 1, 1.2};
    SimOptions sim;
  };
  struct Cell {
    double slo_scale = 1, rate_scale = 1;
    std::vector<double> slos_ms, rates_rps;
    // Per policy: SLO-preserved max throughput (req/s, the three at the
    // paper's rate ratios), what ended the search ("refused": the policy
    // refused the next load; "broken": it planned it and the plan broke
    // 1 %), and the plan at the maximum ("model(p %, b)" per partition).
    std::vector<double> max_rps;
    std::vector<std::string> limit;
    std::vector<std::string> layout;
    // The paper's metric, sum_i b_i / t_i (t_i: the median request
    // latency), at the heaviest load at the paper's ratios that both las
    // and sbp hold (`common_rps`; 0 and n/a when either holds none).
    double common_rps = 0;
    std::vector<double> paper_throughput;
    // Why each policy refuses the scaled paper rates ("" if it plans them).
    std::vector<std::string> refusal;
  };
  struct SettingResult {
    std::string setting;
    std::vector<Cell> cells;  // the first is (1, 1)
  };
  struct Result {
    std::vector<SettingResult> settings;
  };

  // The two settings; `setup` must outlive them. Errors: a model without
  // a profile.
  static absl::StatusOr<Setting> CpuSetting(const EmulatedSetup& setup);
  static absl::StatusOr<Setting> V100Setting(const V100Setup& setup);

  explicit LasReproduction(Options options) : options_(std::move(options)) {}

  // Every setting under `base` with the setting's interference model.
  // Errors: an unknown policy; no "las" or "sbp" among the policies.
  absl::StatusOr<Result> Run(const std::vector<Setting>& settings,
                             const PolicyOptions& base) const;

  // Per setting: LAS's gain over p = 1 (+15.9 %) at (1, 1), with whether
  // the verdict stays the same over the whole +-20 % grid.
  std::vector<ReproductionClaim> Verdicts(const Result& result) const;

  void Print(const Result& result, const std::string& rules,
             std::FILE* out) const;
  void AppendCsv(const Result& result, const std::string& rules,
                 std::string* csv) const;

  // The paper's rates and SLOs.
  static const std::vector<double>& PaperRates();
  static const std::vector<double>& PaperSlos();

 private:
  absl::StatusOr<SettingResult> RunSetting(const Setting& setting,
                                           const PolicyOptions& base) const;

  Options options_;
};

}  // namespace tessera
