#include "datasets/igniter_evaluation.h"

#include <algorithm>
#include <cmath>

namespace tessera {

double IgniterCheck::relative_error() const {
  return std::fabs(predicted_ms - measured_ms) / measured_ms;
}

IgniterEvaluation EvaluateIgniterModel(const IgniterCoefficients& coefficients,
                                       const IgniterV100Data& data) {
  const IgniterModel model(coefficients.hardware);
  IgniterEvaluation out;
  for (const auto& [name, profile] : data.profiles) {
    auto it = coefficients.workloads.find(name);
    if (it == coefficients.workloads.end()) continue;
    for (const LatencyPoint& pt : profile.latency()) {
      IgniterCheck c;
      c.model = name;
      c.batch = pt.batch_size();
      c.share_percent = pt.share_percent();
      c.measured_ms = pt.latency_ms();
      c.predicted_ms =
          model.Predict({{&it->second, c.batch, c.share_percent}})[0]
              .inference_ms;
      out.solo.push_back(c);
    }
  }
  for (const IgniterCoLocationRow& row : data.colocation) {
    auto a = coefficients.workloads.find(row.model1);
    auto b = coefficients.workloads.find(row.model2);
    if (a == coefficients.workloads.end() ||
        b == coefficients.workloads.end()) {
      continue;
    }
    const auto p = model.Predict({{&a->second, row.batch1, row.share1},
                                  {&b->second, row.batch2, 100 - row.share1}});
    out.pairs.push_back({row.model1, row.batch1, row.share1, row.model2,
                         row.latency1_ms, p[0].inference_ms});
    out.pairs.push_back({row.model2, row.batch2, 100 - row.share1, row.model1,
                         row.latency2_ms, p[1].inference_ms});
  }
  return out;
}

double ErrorQuantile(const std::vector<IgniterCheck>& checks, double q) {
  if (checks.empty()) return 0;
  std::vector<double> e;
  for (const auto& c : checks) e.push_back(c.relative_error());
  std::sort(e.begin(), e.end());
  const size_t i = std::min(e.size() - 1, static_cast<size_t>(q * e.size()));
  return e[i];
}

}  // namespace tessera
