#pragma once

#include <vector>

#include "scheduler/inss_environment.h"
#include "sim/cluster_simulator.h"
#include "sim/ground_truth.h"

namespace tessera {

// InSS's training step judged by the discrete-event simulator: the step's
// provisioning and BDA batches become a plan (as the inss policy would
// serve it), which ClusterSimulator runs on `truth` under Poisson arrivals
// at the step's rates for `options.duration` (after `options.warmup`).
// A model BDA cannot batch within its SLO ((4a)-(4c) fail) has all its
// requests violate: the inss policy refuses such a provisioning, so
// whatever the simulator would make of it is never served. The simulator
// is what every experiment measures plans against, so an actor trained
// here is trained on the measure it is judged by.
class SimulatedInssJudge : public InssStepJudge {
 public:
  // `truth` must outlive the judge.
  SimulatedInssJudge(const GroundTruth* truth, SimOptions options)
      : truth_(truth), options_(std::move(options)) {}

  std::vector<double> ViolationFractions(const InssCluster& cluster,
                                         const InssProvisioning& provisioning,
                                         const InssBatchResult& bda,
                                         const std::vector<double>& rates_rps,
                                         uint64_t seed) const override;

  // One simulated second after a quarter-second warm-up.
  static SimOptions StepOptions();

 private:
  const GroundTruth* truth_;
  SimOptions options_;
};

}  // namespace tessera
