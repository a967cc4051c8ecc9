#include "perfmodel/interference_evaluation.h"

#include <cmath>
#include <random>
#include <set>

#include "common/percentile.h"

namespace tessera {

std::vector<InterferenceFitter> StandardInterferenceFitters() {
  return {
      {"none (factor 1)",
       [](const auto&) { return std::make_unique<NoInterference>(); }},
      {"constant",
       [](const auto& rows) {
         return std::make_unique<ConstantInterference>(
             ConstantInterference::Fit(rows));
       }},
      {"gpulet-linear",
       [](const auto& rows) -> std::unique_ptr<InterferenceModel> {
         auto m = LinearInterference::Fit(rows);
         if (!m.ok()) return nullptr;
         return std::make_unique<LinearInterference>(*m);
       }},
      {"pairwise",
       [](const auto& rows) -> std::unique_ptr<InterferenceModel> {
         auto m = PairwiseInterference::Fit(rows);
         if (!m.ok()) return nullptr;
         return std::make_unique<PairwiseInterference>(*m);
       }},
  };
}

std::vector<double> RelativeErrors(const InterferenceModel& model,
                                   const std::vector<CoLocationSample>& rows) {
  std::vector<double> errors;
  for (const auto& s : rows) {
    const double predicted = model.LatencyMs(s.self, {s.other});
    errors.push_back(std::fabs(predicted - s.latency_ms) / s.latency_ms);
  }
  return errors;
}

std::vector<double> LeaveGroupOut(
    const std::vector<CoLocationSample>& rows,
    const std::function<std::string(const CoLocationSample&)>& group,
    const InterferenceFitter& fitter) {
  std::set<std::string> groups;
  for (const auto& s : rows) groups.insert(group(s));
  std::vector<double> all;
  for (const auto& g : groups) {
    std::vector<CoLocationSample> train, test;
    for (const auto& s : rows) (group(s) == g ? test : train).push_back(s);
    if (train.empty()) continue;
    auto model = fitter.fit(train);
    if (model == nullptr) continue;
    auto e = RelativeErrors(*model, test);
    all.insert(all.end(), e.begin(), e.end());
  }
  return all;
}

std::string ModelPairOf(const CoLocationSample& s) {
  std::string a = s.self.model->model(), b = s.other.model->model();
  return a < b ? a + "+" + b : b + "+" + a;
}

std::string CellOf(const CoLocationSample& s) {
  int b1 = s.self.batch, b2 = s.other.batch;
  double p1 = s.self.share_percent;
  if (s.self.model->model() > s.other.model->model()) {
    std::swap(b1, b2);
    p1 = 100 - p1;
  }
  return std::to_string(b1) + "/" + std::to_string(b2) + "/" +
         std::to_string(static_cast<int>(p1));
}

void SplitRowPairs(const std::vector<CoLocationSample>& rows, uint64_t seed,
                   double train_fraction, std::vector<CoLocationSample>* train,
                   std::vector<CoLocationSample>* test) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  for (size_t i = 0; i + 1 < rows.size(); i += 2) {
    auto* dst = std::uniform_real_distribution<>(0, 1)(rng) < train_fraction
                    ? train
                    : test;
    dst->push_back(rows[i]);
    dst->push_back(rows[i + 1]);
  }
}

void PrintInterferenceErrorTable(const std::vector<CoLocationSample>& rows,
                                 uint64_t seed, FILE* out) {
  std::vector<CoLocationSample> train, test;
  SplitRowPairs(rows, seed, 0.7, &train, &test);
  std::fprintf(out,
               "Relative error of predicted co-located latency (solo L(b,p) "
               "x factor), %zu rows\n",
               rows.size());
  std::fprintf(out, "%-18s | %-23s | %-23s | %-23s\n", "model",
               "random 70/30 split", "leave-one-pair-out",
               "leave-one-cell-out");
  std::fprintf(out, "%-18s | %7s %7s %7s | %7s %7s %7s | %7s %7s %7s\n", "",
               "p50", "p90", "p95", "p50", "p90", "p95", "p50", "p90", "p95");
  for (const InterferenceFitter& fitter : StandardInterferenceFitters()) {
    std::vector<double> random_errors;
    if (!train.empty()) {
      auto model = fitter.fit(train);
      if (model != nullptr) random_errors = RelativeErrors(*model, test);
    }
    auto pair_errors = LeaveGroupOut(rows, ModelPairOf, fitter);
    auto cell_errors = LeaveGroupOut(rows, CellOf, fitter);
    std::fprintf(out, "%-18s |", fitter.name.c_str());
    for (const auto* e : {&random_errors, &pair_errors, &cell_errors}) {
      if (e->empty()) {
        std::fprintf(out, " %7s %7s %7s |", "-", "-", "-");
        continue;
      }
      std::fprintf(out, " %6.1f%% %6.1f%% %6.1f%% |", 100 * Percentile(*e, .5),
                   100 * Percentile(*e, .9), 100 * Percentile(*e, .95));
    }
    std::fprintf(out, "\n");
  }
}

}  // namespace tessera
