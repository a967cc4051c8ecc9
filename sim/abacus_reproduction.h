#pragma once

// Abacus (SC'21) on the emulated A100: Tessera's group-latency predictor is
// profiled and trained on the emulated device (whose ground truth is the
// authors' fitted predictors), then the 21 pairs of the seven services, the
// four triplets and the quadruplet of {resnet101, resnet152, vgg19, bert}
// run under Abacus and under FCFS, SJF and EDF, at the QoS load and at the
// peak-throughput load, with the artifact's per-set QoS targets.

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "overlap/a100_ground_truth.h"
#include "overlap/group_predictor.h"
#include "overlap/predictor_training.h"
#include "sim/overlap_device_simulator.h"
#include "sim/reproduction_claim.h"

namespace tessera {

class AbacusReproduction {
 public:
  struct Options {
    std::string data_dir = "../shared/data/abacus-a100";
    // Profiling: groups per group size and runs per group (the paper:
    // 2,000 groups per pair, 100 runs each).
    int profile_groups = 2000;
    int profile_runs = 100;
    int train_epochs = 250;
    // Train the predictor with the artifact's recipe (ArtifactTraining)
    // instead of Tessera's.
    bool artifact_training = false;
    int queries = 1000;  // per run, as the artifact
    // Load of the QoS runs (Sec. 7.2: 50 QPS, GPU not saturated) and the
    // loads of the peak runs (Sec. 7.3: 100 QPS at the paper's mean batch
    // of 15, saturated); a scheduler's peak throughput is its highest
    // goodput over them. Each is total QPS, or with *_in_capacity a
    // multiple of the set's sequential capacity (1000 / mean latency of a
    // query alone, ms: the load that saturates the device run one query
    // at a time).
    double qos_load = 50;
    bool qos_load_in_capacity = false;
    std::vector<double> peak_loads = {1.0, 1.25, 1.5, 2.0};
    bool peak_load_in_capacity = true;
    int repeats = 1;  // seeds per configuration
    uint64_t seed = 1;
    OverlapSimOptions sim;  // Abacus's options (ways, early stop, ...)
    // Only these set classes: "pairs", "triplets", "quadruplet".
    std::vector<std::string> classes = {"pairs", "triplets", "quadruplet"};
    // At most this many sets per class (smoke tests); 0: all.
    int max_sets_per_class = 0;
    // The set whose Abacus run at the QoS load is traced (the paper's
    // largest throughput gain).
    std::string trace_set = "resnet50+resnet152";
  };

  // The sequential capacity of a set (QPS): 1000 / the mean latency of one
  // of its queries alone (batch 4; bert at each sequence length equally).
  static double SequentialCapacityQps(const A100GroundTruth& truth,
                                      const std::vector<int>& set);

  // One set under one scheduler at one load.
  struct Row {
    std::string set_class, set;
    double qos_ms = 0, load_qps = 0;
    bool peak = false;
    std::string scheduler;
    OverlapRunResult run;  // repeats merged: counts summed, p99 averaged
  };

  // How far the extrapolated "query alone" of the ground truth is from
  // what the authors measured: the same query beside one operator of each
  // other service (the closest measured groups).
  struct AloneCheck {
    std::string service;
    double alone_ms = 0;
    double beside_one_op_min_ms = 0, beside_one_op_max_ms = 0;
  };

  struct Result {
    std::vector<AloneCheck> alone;
    std::vector<HeldoutError> predictor;  // per predictor and group size
    std::vector<std::string> predictor_names;
    std::vector<Row> rows;
    std::vector<ReproductionClaim> claims;
    // The rounds of one Abacus run (trace_set at the QoS load), for the
    // trace plot.
    std::vector<OverlapRound> trace;
  };

  explicit AbacusReproduction(Options options) : options_(std::move(options)) {}

  absl::StatusOr<Result> Run() const;
  void Print(const Result& result, std::FILE* out) const;
  static void AppendCsv(const Result& result, std::string* csv);
  // One line per group member per round: round, start_ms, end_ms,
  // predicted_ms, service, start_op, end_op.
  static std::string TraceCsv(const Result& result);

 private:
  // Profiles groups of 1..max_size services of `set` on the emulated A100
  // and trains one MLP per size; appends the held-out errors.
  absl::StatusOr<std::unique_ptr<LearnedGroupPredictor>> Learn(
      const A100GroundTruth& truth, const std::vector<int>& set, int max_size,
      const std::string& name, Result* result) const;
  std::vector<ReproductionClaim> Claims(const Result& result) const;
  // The total QPS of a run of `set` at `load` (a QoS or a peak load).
  double LoadQps(const A100GroundTruth& truth, const std::vector<int>& set,
                 bool peak, double load) const;
  // The highest goodput of `scheduler` on `set` over the peak loads.
  static double PeakGoodput(const Result& result, const std::string& set,
                            const std::string& scheduler);

  Options options_;
};

}  // namespace tessera
