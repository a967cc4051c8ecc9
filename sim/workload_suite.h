#pragma once

#include <string>
#include <vector>

namespace tessera {

// A multi-model workload on the V100 models: model instances ("alexnet/2"
// is a replica), each at the same base rate.
struct Workload {
  std::string name;
  std::vector<std::string> models;
};

// The V100 workloads: the six pairs, all four, game (3 alexnet + vgg19),
// game-small (2 alexnet + vgg19) and the six-model mix (all four + 2
// alexnet).
std::vector<Workload> V100Workloads();

// One case of the planning-rules suite: a workload at an SLO factor.
struct SuiteCase {
  Workload workload;
  double slo_factor = 5;
  // The half the rules are calibrated on; the other is held out.
  bool calibration = false;
  std::string label() const;
};

// The planning-rules suite: every V100 workload at SLO 3x, 5x and 10x (30
// cases), split into two halves before any calibration, in a checkerboard
// over (workload, SLO factor) so that each half holds every workload and
// every SLO factor: case (w, s) calibrates when w + s is even (w the
// workload's index in V100Workloads(), s the factor's in {3, 5, 10}).
std::vector<SuiteCase> RulesSuite();

}  // namespace tessera
