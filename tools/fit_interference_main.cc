// tessera_fit_interference: fits interference models on co-location
// measurements and prints their held-out prediction error distributions.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "perfmodel/glet_data.h"
#include "perfmodel/igniter_v100_data.h"
#include "perfmodel/interference_model.h"

ABSL_FLAG(std::string, v100_profile,
          "../shared/data/igniter-v100/profile.jsonl",
          "iGniter's public V100 measurements (profile.jsonl).");
ABSL_FLAG(std::string, share100_rule, "batch1-ratio",
          "How to fill L(b>1, 100%): batch1-ratio, same-as-80 or omit.");
ABSL_FLAG(int, seed, 1, "Seed of the random split.");
ABSL_FLAG(std::string, glet_dir, "../shared/data/glet",
          "The glet artifact's data; its published interference "
          "coefficients are applied to the V100 rows where present.");

namespace tessera {
namespace {

using Fitter = std::function<std::unique_ptr<InterferenceModel>(
    const std::vector<CoLocationSample>&)>;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

// Relative error of predicted co-located latency on `test`.
std::vector<double> Errors(const InterferenceModel& model,
                           const std::vector<CoLocationSample>& test) {
  std::vector<double> errors;
  for (const auto& s : test) {
    const double predicted = model.LatencyMs(s.self, {s.other});
    errors.push_back(std::fabs(predicted - s.latency_ms) / s.latency_ms);
  }
  return errors;
}

// Trains on rows whose group differs from each group in turn and tests on
// that group; returns the pooled held-out errors.
std::vector<double> LeaveGroupOut(
    const std::vector<CoLocationSample>& samples,
    const std::function<std::string(const CoLocationSample&)>& group,
    const Fitter& fit) {
  std::set<std::string> groups;
  for (const auto& s : samples) groups.insert(group(s));
  std::vector<double> all;
  for (const auto& g : groups) {
    std::vector<CoLocationSample> train, test;
    for (const auto& s : samples) (group(s) == g ? test : train).push_back(s);
    auto model = fit(train);
    if (model == nullptr) continue;
    auto e = Errors(*model, test);
    all.insert(all.end(), e.begin(), e.end());
  }
  return all;
}

int Run() {
  auto rule = ParseShare100Rule(absl::GetFlag(FLAGS_share100_rule));
  if (!rule.ok()) {
    std::fprintf(stderr, "%s\n", rule.status().ToString().c_str());
    return 2;
  }
  auto data = LoadIgniterV100(absl::GetFlag(FLAGS_v100_profile), *rule);
  if (!data.ok()) {
    std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
    return 1;
  }
  auto models = BuildLatencyModels(data->profiles);
  if (!models.ok()) return 1;
  const auto samples = ToSamples(data->colocation, *models);

  std::vector<double> noise;
  for (const auto& r : data->colocation) {
    noise.push_back(r.std1_ms / r.latency1_ms);
    noise.push_back(r.std2_ms / r.latency2_ms);
  }
  std::printf("%zu co-location rows (%zu samples), %zu models\n",
              data->colocation.size(), samples.size(), models->size());
  std::printf("measurement noise std/mean: p50 %.1f%%  p90 %.1f%%\n\n",
              100 * Percentile(noise, .5), 100 * Percentile(noise, .9));

  const std::vector<std::pair<std::string, Fitter>> fitters = {
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

  // Random 70/30 split (by row, so both samples of a row stay together).
  std::mt19937 rng(absl::GetFlag(FLAGS_seed));
  std::vector<CoLocationSample> train, test;
  for (size_t i = 0; i + 1 < samples.size(); i += 2) {
    auto& dst =
        std::uniform_real_distribution<>(0, 1)(rng) < 0.7 ? train : test;
    dst.push_back(samples[i]);
    dst.push_back(samples[i + 1]);
  }
  auto pair_of = [](const CoLocationSample& s) {
    std::string a = s.self.model->model(), b = s.other.model->model();
    return a < b ? a + "+" + b : b + "+" + a;
  };
  auto cell_of = [](const CoLocationSample& s) {
    // The (batch, batch, share) cell of the row, independent of which side
    // is `self`.
    int b1 = s.self.batch, b2 = s.other.batch;
    double p1 = s.self.share_percent;
    if (s.self.model->model() > s.other.model->model()) {
      std::swap(b1, b2);
      p1 = 100 - p1;
    }
    return std::to_string(b1) + "/" + std::to_string(b2) + "/" +
           std::to_string(static_cast<int>(p1));
  };

  std::printf(
      "Relative error of predicted co-located latency (solo L(b,p) x "
      "factor)\n");
  std::printf("%-18s | %-23s | %-23s | %-23s\n", "model", "random 70/30 split",
              "leave-one-pair-out", "leave-one-cell-out");
  std::printf("%-18s | %7s %7s %7s | %7s %7s %7s | %7s %7s %7s\n", "", "p50",
              "p90", "p95", "p50", "p90", "p95", "p50", "p90", "p95");
  for (const auto& [name, fit] : fitters) {
    auto model = fit(train);
    auto random_errors = Errors(*model, test);
    auto pair_errors = LeaveGroupOut(samples, pair_of, fit);
    auto cell_errors = LeaveGroupOut(samples, cell_of, fit);
    std::printf("%-18s |", name.c_str());
    for (const auto* e : {&random_errors, &pair_errors, &cell_errors}) {
      std::printf(" %6.1f%% %6.1f%% %6.1f%% |", 100 * Percentile(*e, .5),
                  100 * Percentile(*e, .9), 100 * Percentile(*e, .95));
    }
    std::printf("\n");
  }
  // Transfer check: gpulet's own published coefficients (fitted by its
  // authors on other GPUs) applied unchanged to the V100 rows.
  for (const char* gpu : {"2080ti", "3080"}) {
    auto published = LoadGletInterferenceConstants(
        absl::GetFlag(FLAGS_glet_dir) + "/" + gpu + "/INT_MODEL_CONSTANT.CSV");
    if (!published.ok()) continue;
    const auto e = Errors(*published, samples);
    std::printf(
        "gpulet's published %s coefficients on all V100 rows: p50 %.1f%%  "
        "p90 %.1f%%  p95 %.1f%%\n",
        gpu, 100 * Percentile(e, .5), 100 * Percentile(e, .9),
        100 * Percentile(e, .95));
  }
  auto linear = LinearInterference::Fit(samples);
  if (linear.ok()) {
    const auto& c = linear->coefficients();
    std::printf(
        "\ngpulet-linear fitted on all rows: factor = %.4f L2_self + %.4f "
        "L2_other + %.4f DRAM_self + %.4f DRAM_other + %.4f\n",
        c[0], c[1], c[2], c[3], c[4]);
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Fits interference models (constant, gpulet's linear model, Tessera's "
      "pairwise model) on the V100 co-location measurements and prints the "
      "held-out error CDF (p50/p90/p95) for a random split, leave-one-model-"
      "pair-out and leave-one-(batch,share)-cell-out.");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
