#include "perfmodel/interference_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/status_macros.h"
#include "perfmodel/least_squares.h"

namespace tessera {
namespace {

double Solo(const Placement& p) {
  return p.model->LatencyMs(p.batch, p.share_percent);
}
double L2(const Placement& p) {
  return p.model->L2Util(p.batch, p.share_percent) / 100.0;
}
double Dram(const Placement& p) {
  return p.model->DramUtil(p.batch, p.share_percent) / 100.0;
}

}  // namespace

double InterferenceModel::LatencyMs(
    const Placement& self, const std::vector<Placement>& neighbours) const {
  double factor = 1.0;
  for (const Placement& n : neighbours) {
    factor = std::max(factor, Factor(self, n));
  }
  return Solo(self) * factor;
}

ConstantInterference ConstantInterference::Fit(
    const std::vector<CoLocationSample>& rows) {
  double sum = 0;
  for (const auto& r : rows) sum += r.latency_ms / Solo(r.self);
  return ConstantInterference(rows.empty() ? 1.0 : sum / rows.size());
}

absl::StatusOr<LinearInterference> LinearInterference::Fit(
    const std::vector<CoLocationSample>& rows) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& r : rows) {
    x.push_back({L2(r.self), L2(r.other), Dram(r.self), Dram(r.other), 1.0});
    y.push_back(r.latency_ms / Solo(r.self));
  }
  ASSIGN_OR_RETURN(auto w, SolveLeastSquares(x, y, 1e-9));
  return LinearInterference(w);
}

double LinearInterference::Factor(const Placement& self,
                                  const Placement& other) const {
  return FactorFromUtil(L2(self), L2(other), Dram(self), Dram(other));
}

double LinearInterference::FactorFromUtil(double l2_self, double l2_other,
                                          double dram_self,
                                          double dram_other) const {
  const double f = c_[0] * l2_self + c_[1] * l2_other + c_[2] * dram_self +
                   c_[3] * dram_other + c_[4];
  return std::max(1.0, f);
}

std::vector<double> PairwiseInterference::Features(
    const Placement& self, const Placement& other) const {
  // Per model m (as the one slowed down): intercept, sensitivity to the
  // neighbour's DRAM and L2 pressure, and to its own batch size and share;
  // shared: the neighbour's share and batch size.
  constexpr size_t kPer = 5;
  const size_t m = models_.size();
  std::vector<double> f(kPer * m + 2 + m * m, 0.0);
  const double d = Dram(other), l = L2(other);
  const double lb = std::log2(static_cast<double>(std::max(1, self.batch)));
  const double ps = self.share_percent / 100.0;
  auto fill = [&](size_t i, double w) {
    f[kPer * i + 0] += w;
    f[kPer * i + 1] += w * d;
    f[kPer * i + 2] += w * l;
    f[kPer * i + 3] += w * lb;
    f[kPer * i + 4] += w * ps;
  };
  auto it = models_.find(self.model->model());
  if (it != models_.end()) {
    fill(it->second, 1.0);
  } else {  // unknown model: the average model
    for (size_t i = 0; i < m; ++i) fill(i, 1.0 / m);
  }
  f[kPer * m + 0] = other.share_percent / 100.0;
  f[kPer * m + 1] = std::log2(static_cast<double>(std::max(1, other.batch)));
  auto jt = models_.find(other.model->model());
  if (it != models_.end() && jt != models_.end()) {
    f[kPer * m + 2 + it->second * m + jt->second] = 1.0;
  }
  return f;
}

absl::StatusOr<PairwiseInterference> PairwiseInterference::Fit(
    const std::vector<CoLocationSample>& rows, double ridge) {
  PairwiseInterference model;
  std::set<std::string> names;
  for (const auto& r : rows) {
    names.insert(r.self.model->model());
    names.insert(r.other.model->model());
  }
  int i = 0;
  for (const auto& n : names) model.models_[n] = i++;
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (const auto& r : rows) {
    x.push_back(model.Features(r.self, r.other));
    y.push_back(std::log(r.latency_ms / Solo(r.self)));
  }
  ASSIGN_OR_RETURN(auto w, SolveLeastSquares(x, y, ridge));
  model.w_ = std::move(w);
  return model;
}

double PairwiseInterference::Factor(const Placement& self,
                                    const Placement& other) const {
  const std::vector<double> f = Features(self, other);
  double v = 0;
  for (size_t i = 0; i < f.size(); ++i) v += w_[i] * f[i];
  return std::max(1.0, std::exp(v));
}

}  // namespace tessera
