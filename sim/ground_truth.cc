#include "sim/ground_truth.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"

namespace tessera {

GroundTruth::GroundTruth(std::map<std::string, LatencyModel> models,
                         const std::vector<IgniterCoLocationRow>& rows,
                         double noise_sigma)
    : models_(std::move(models)), noise_sigma_(noise_sigma) {
  std::set<int> shares;
  std::map<std::pair<std::string, int>,
           std::map<std::pair<int, int>, std::pair<double, int>>>
      sums;
  auto add = [&](const std::string& self, const std::string& other, int b,
                 int b2, int share, double latency) {
    auto it = models_.find(self);
    if (it == models_.end()) return;
    const double f = latency / it->second.LatencyMs(b, share);
    measured_[{self, other, share}][{b, b2}] = f;
    auto& s = sums[{self, share}][{b, b2}];
    s.first += f;
    s.second += 1;
    shares.insert(share);
  };
  for (const auto& r : rows) {
    const int s1 = static_cast<int>(std::lround(r.share1));
    add(r.model1, r.model2, r.batch1, r.batch2, s1, r.latency1_ms);
    add(r.model2, r.model1, r.batch2, r.batch1, 100 - s1, r.latency2_ms);
  }
  for (const auto& [key, cell] : sums) {
    for (const auto& [bb, s] : cell) mean_[key][bb] = s.first / s.second;
  }
  shares_.assign(shares.begin(), shares.end());
}

GroundTruth::GroundTruth(std::map<std::string, LatencyModel> models,
                         std::shared_ptr<const InterferenceModel> interference,
                         double noise_sigma)
    : models_(std::move(models)),
      interference_(std::move(interference)),
      noise_sigma_(noise_sigma) {}

const LatencyModel* GroundTruth::model(const std::string& name) const {
  // Replicas ("alexnet/2") behave like the measured model.
  auto it = models_.find(name.substr(0, name.find('/')));
  return it == models_.end() ? nullptr : &it->second;
}

double GroundTruth::CellFactor(const Cell& cell, int b, int b2) const {
  std::set<int> xs, ys;
  for (const auto& [bb, f] : cell) {
    xs.insert(bb.first);
    ys.insert(bb.second);
  }
  // Bracketing measured batches in log2 space, clamped to the grid.
  auto bracket = [](const std::set<int>& v, int x, int* lo, int* hi,
                    double* t) {
    x = std::clamp(x, *v.begin(), *v.rbegin());
    auto it = v.lower_bound(x);
    if (*it == x) {
      *lo = *hi = x;
      *t = 0;
      return;
    }
    *hi = *it;
    *lo = *std::prev(it);
    *t = (std::log2(x) - std::log2(*lo)) / (std::log2(*hi) - std::log2(*lo));
  };
  int x0, x1, y0, y1;
  double tx, ty;
  bracket(xs, b, &x0, &x1, &tx);
  bracket(ys, b2, &y0, &y1, &ty);
  auto at = [&](int x, int y) {
    auto it = cell.find({x, y});
    return it == cell.end() ? 1.0 : it->second;
  };
  return (1 - tx) * (1 - ty) * at(x0, y0) + tx * (1 - ty) * at(x1, y0) +
         (1 - tx) * ty * at(x0, y1) + tx * ty * at(x1, y1);
}

double GroundTruth::Factor(const std::string& model_name, int batch,
                           double share, const std::string& other_name,
                           int other_batch) const {
  if (interference_ != nullptr) {
    const LatencyModel* self = model(model_name);
    const LatencyModel* them = model(other_name);
    if (self == nullptr || them == nullptr) return 1.0;
    return std::max(1.0,
                    interference_->Factor({self, batch, share},
                                          {them, other_batch, 100 - share}));
  }
  if (shares_.empty()) return 1.0;
  const std::string model = model_name.substr(0, model_name.find('/'));
  const std::string other = other_name.substr(0, other_name.find('/'));
  int nearest = shares_.front();
  for (int s : shares_) {
    if (std::fabs(s - share) < std::fabs(nearest - share)) nearest = s;
  }
  auto it = measured_.find({model, other, nearest});
  if (it != measured_.end()) return CellFactor(it->second, batch, other_batch);
  auto mit = mean_.find({model, nearest});
  if (mit != mean_.end()) return CellFactor(mit->second, batch, other_batch);
  return 1.0;
}

absl::StatusOr<GroundTruth::CorunnerRule> GroundTruth::ParseCorunnerRule(
    absl::string_view s) {
  if (s == "sum") return CorunnerRule::kSumOfExcess;
  if (s == "product") return CorunnerRule::kProduct;
  if (s == "max") return CorunnerRule::kMax;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown co-runner rule '", s, "' (expected sum, product or max)"));
}

double GroundTruth::CombinedFactor(
    const std::string& model, int batch, double share,
    const std::vector<Corunner>& corunners) const {
  double sum = 1, product = 1, worst = 1;
  for (const Corunner& c : corunners) {
    const double f = Factor(model, batch, share, *c.model, c.batch);
    sum += f - 1;
    product *= f;
    worst = std::max(worst, f);
  }
  switch (corunner_rule_) {
    case CorunnerRule::kProduct:
      return product;
    case CorunnerRule::kMax:
      return worst;
    default:
      return sum;
  }
}

double GroundTruth::LatencyMs(const std::string& model, int batch, double share,
                              const std::string* other, int other_batch,
                              std::mt19937_64* rng) const {
  std::vector<Corunner> corunners;
  if (other != nullptr) corunners.push_back({other, other_batch});
  return LatencyMs(model, batch, share, corunners, rng);
}

double GroundTruth::LatencyMs(const std::string& model, int batch, double share,
                              const std::vector<Corunner>& corunners,
                              std::mt19937_64* rng) const {
  const LatencyModel* m = this->model(model);
  double latency = m->LatencyMs(batch, share);
  if (!corunners.empty()) {
    latency *= CombinedFactor(model, batch, share, corunners);
  }
  if (noise_sigma_ > 0 && rng != nullptr) {
    std::lognormal_distribution<double> noise(-noise_sigma_ * noise_sigma_ / 2,
                                              noise_sigma_);
    latency *= noise(*rng);
  }
  return latency;
}

}  // namespace tessera
