#pragma once

// A group-latency predictor for controller tests: no overlap at all, a
// group takes the sum of its ranges, each operator of service s taking
// ms_per_op[s]. Counts its calls.

#include <vector>

#include "overlap/group_predictor.h"

namespace tessera {
namespace testing {

class AdditivePredictor : public GroupLatencyPredictor {
 public:
  explicit AdditivePredictor(std::vector<double> ms_per_op)
      : ms_per_op_(std::move(ms_per_op)) {}
  std::vector<double> PredictMs(
      const std::vector<OperatorGroup>& groups) const override {
    ++calls;
    std::vector<double> out;
    for (const OperatorGroup& g : groups) {
      double ms = 0;
      for (const GroupMember& m : g) {
        ms += (m.end_op - m.start_op) * ms_per_op_.at(m.service);
      }
      out.push_back(ms);
    }
    return out;
  }
  mutable int calls = 0;

 private:
  std::vector<double> ms_per_op_;
};

}  // namespace testing
}  // namespace tessera
