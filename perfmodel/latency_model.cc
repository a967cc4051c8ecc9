#include "perfmodel/latency_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tessera {

absl::StatusOr<LatencyModel> LatencyModel::FromProfile(
    const ModelProfile& profile) {
  std::set<int> batches;
  std::set<double> shares;
  for (const LatencyPoint& p : profile.latency()) {
    // The policies keep a dense table over batches 1..max: a batch beyond
    // kMaxProfiledBatch is a broken (or hostile) file, not a profile.
    if (p.batch_size() < 1 || p.batch_size() > kMaxProfiledBatch ||
        !(p.share_percent() > 0) || p.share_percent() > 100 ||
        !(p.latency_ms() > 0) || !std::isfinite(p.latency_ms())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "profile of '", profile.model(), "': bad point batch ",
          p.batch_size(), " (1..", kMaxProfiledBatch, ") share ",
          p.share_percent(), " (0..100] latency ", p.latency_ms(), " ms"));
    }
    batches.insert(p.batch_size());
    shares.insert(p.share_percent());
  }
  if (batches.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile of '", profile.model(), "' has no points"));
  }
  LatencyModel m;
  m.model_ = profile.model();
  m.memory_bytes_ = profile.memory_bytes();
  m.batches_.assign(batches.begin(), batches.end());
  m.shares_.assign(shares.begin(), shares.end());
  m.table_.assign(3, std::vector<std::map<int, double>>(m.shares_.size()));
  for (const LatencyPoint& p : profile.latency()) {
    const size_t s = std::lower_bound(m.shares_.begin(), m.shares_.end(),
                                      p.share_percent()) -
                     m.shares_.begin();
    m.table_[kLatency][s][p.batch_size()] = p.latency_ms();
    m.table_[kL2][s][p.batch_size()] = p.l2_util_percent();
    m.table_[kDram][s][p.batch_size()] = p.dram_util_percent();
  }
  // Monotone envelope of latency: non-decreasing in b at each share ...
  for (auto& curve : m.table_[kLatency]) {
    double running = 0;
    for (auto& [b, v] : curve) running = v = std::max(v, running);
  }
  // ... and non-increasing in p at each profiled batch: walk shares from
  // large to small and compare with the nearest larger share whose curve
  // reaches this batch (a share profiled at batch 1 only says nothing
  // about batch 8).
  for (int s = static_cast<int>(m.shares_.size()) - 2; s >= 0; --s) {
    for (auto& [b, v] : m.table_[kLatency][s]) {
      for (size_t t = s + 1; t < m.shares_.size(); ++t) {
        const auto& larger = m.table_[kLatency][t];
        if (!larger.empty() && larger.rbegin()->first >= b) {
          v = std::max(v, m.AtShare(kLatency, t, b));
          break;
        }
      }
    }
  }
  // Dense tables for every batch 1..max_batch (the policies' hot path).
  m.dense_.assign(3, std::vector<std::vector<double>>(m.shares_.size()));
  for (int f = 0; f < 3; ++f) {
    for (size_t s = 0; s < m.shares_.size(); ++s) {
      auto& row = m.dense_[f][s];
      row.assign(m.max_batch() + 1, 0.0);
      for (int b = 1; b <= m.max_batch(); ++b) {
        row[b] = m.AtShareSlow(static_cast<Field>(f), s, b);
      }
    }
  }
  // Largest profiled batch per (field, share), 0 when none.
  m.covered_.assign(3, std::vector<int>(m.shares_.size(), 0));
  for (int f = 0; f < 3; ++f) {
    for (size_t s = 0; s < m.shares_.size(); ++s) {
      if (!m.table_[f][s].empty()) {
        m.covered_[f][s] = m.table_[f][s].rbegin()->first;
      }
    }
  }
  return m;
}

double LatencyModel::AtShare(Field f, size_t share_index, int batch) const {
  if (!dense_.empty() && batch >= 1 && batch <= max_batch()) {
    return dense_[f][share_index][batch];
  }
  return AtShareSlow(f, share_index, batch);
}

double LatencyModel::AtShareSlow(Field f, size_t share_index, int batch) const {
  const std::map<int, double>& curve = table_[f][share_index];
  if (curve.empty()) return 0;
  auto hi = curve.lower_bound(batch);
  if (hi != curve.end() && hi->first == batch) return hi->second;
  if (hi == curve.begin()) return hi->second;
  if (hi == curve.end()) {
    auto last = std::prev(curve.end());
    if (curve.size() == 1) {
      return f == kLatency ? last->second * batch / last->first : last->second;
    }
    auto before = std::prev(last);
    const double slope = std::max(
        0.0, (last->second - before->second) / (last->first - before->first));
    return last->second + slope * (batch - last->first);
  }
  auto lo = std::prev(hi);
  const double t =
      static_cast<double>(batch - lo->first) / (hi->first - lo->first);
  return lo->second + t * (hi->second - lo->second);
}

double LatencyModel::Lookup(Field f, int batch, double share) const {
  // Shares whose curve covers this batch size: a share profiled only at
  // batch 1 (e.g. 10 % and 100 % in the V100 data) must not be used to
  // extrapolate large batches. (No allocation: this is the policies' hot
  // path.)
  const int need = std::min(batch, max_batch());
  // Fast path: a profiled share that covers the batch.
  for (size_t s = 0; s < shares_.size(); ++s) {
    if (shares_[s] == share && covered_[f][s] >= need) {
      return AtShare(f, s, batch);
    }
  }
  auto usable = [&](size_t s) { return covered_[f][s] >= need; };
  bool any = false;
  for (size_t s = 0; s < shares_.size() && !any; ++s) any = usable(s);
  auto ok = [&](size_t s) { return any ? usable(s) : covered_[f][s] > 0; };
  int lo = -1, hi = -1, first = -1, last = -1;
  for (size_t s = 0; s < shares_.size(); ++s) {
    if (!ok(s)) continue;
    if (first < 0) first = static_cast<int>(s);
    last = static_cast<int>(s);
    if (shares_[s] <= share) lo = static_cast<int>(s);
    if (hi < 0 && shares_[s] >= share) hi = static_cast<int>(s);
  }
  if (first < 0) return 0;
  if (lo < 0) lo = first;
  if (hi < 0) hi = last;
  const double vlo = AtShare(f, lo, batch);
  if (lo == hi || shares_[lo] >= share) return vlo;
  const double vhi = AtShare(f, hi, batch);
  if (shares_[hi] <= share) return vhi;
  const double t = (1.0 / share - 1.0 / shares_[lo]) /
                   (1.0 / shares_[hi] - 1.0 / shares_[lo]);
  return vlo + t * (vhi - vlo);
}

double LatencyModel::LatencyMs(int batch, double share_percent) const {
  return Lookup(kLatency, batch, share_percent);
}
double LatencyModel::L2Util(int batch, double share_percent) const {
  return Lookup(kL2, batch, share_percent);
}
double LatencyModel::DramUtil(int batch, double share_percent) const {
  return Lookup(kDram, batch, share_percent);
}

absl::StatusOr<std::map<std::string, LatencyModel>> BuildLatencyModels(
    const std::map<std::string, ModelProfile>& profiles) {
  std::map<std::string, LatencyModel> models;
  for (const auto& [name, profile] : profiles) {
    ASSIGN_OR_RETURN(auto m, LatencyModel::FromProfile(profile));
    models.emplace(name, std::move(m));
  }
  return models;
}

}  // namespace tessera
