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
#include "absl/strings/str_cat.h"
#include "common/percentile.h"
#include "common/text_proto.h"
#include "common/usage.h"
#include "datasets/glet_data.h"
#include "datasets/igniter_v100_data.h"
#include "perfmodel/interference_evaluation.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/profile_dir.h"

ABSL_FLAG(std::string, v100_profile,
          "../shared/data/igniter-v100/profile.jsonl",
          "iGniter's public V100 measurements (profile.jsonl).");
ABSL_FLAG(std::string, share100_rule, "batch1-ratio",
          "How to fill L(b>1, 100%): batch1-ratio, same-as-80 or omit.");
ABSL_FLAG(int, seed, 1, "Seed of the random split.");
ABSL_FLAG(std::string, profile_dir, "",
          "Fit on a profiler's output instead of the V100 data: the "
          "<model>.pbtxt profiles and pairs.csv of this folder "
          "(e.g. profiles/cuda).");
ABSL_FLAG(bool, write_interference, false,
          "With --profile_dir: write gpulet's linear form fitted on all "
          "its pairs to <profile_dir>/interference.pbtxt.");
ABSL_FLAG(std::string, glet_dir, "../shared/data/glet",
          "The glet artifact's data; its published interference "
          "coefficients are applied to the V100 rows, and to its own "
          "UTIL.CSV counters, where present.");

namespace tessera {
namespace {

// The fit on one device kind's measured profiles and pairs.
int RunOnProfileDir(const std::string& dir, bool write) {
  auto loaded = ProfileDir::Load(dir);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
    return 1;
  }
  const auto& samples = (*loaded)->pairs();
  std::printf("%s: %zu profiles, %zu pair samples\n\n", dir.c_str(),
              (*loaded)->profiles().size(), samples.size());
  if (samples.empty()) return 1;
  PrintInterferenceErrorTable(samples, absl::GetFlag(FLAGS_seed), stdout);
  auto linear = LinearInterference::Fit(samples);
  if (!linear.ok()) {
    std::fprintf(stderr, "%s\n", linear.status().ToString().c_str());
    return 1;
  }
  const auto& c = linear->coefficients();
  std::printf(
      "\ngpulet-linear fitted on all rows: factor = %.4f L2_self + %.4f "
      "L2_other + %.4f DRAM_self + %.4f DRAM_other + %.4f\n",
      c[0], c[1], c[2], c[3], c[4]);
  if (!write) return 0;
  InterferenceProfile ip;
  ip.set_device_kind((*loaded)->profiles().begin()->second.device_kind());
  for (double x : c) ip.add_linear_coefficients(x);
  ip.set_source(absl::StrCat(
      "tessera_fit_interference --profile_dir: gpulet's linear form fitted "
      "on the ",
      samples.size(), " pair samples of pairs.csv; profiles: ",
      (*loaded)->profiles().begin()->second.source()));
  absl::Status s = WriteTextProto(dir + "/interference.pbtxt", ip);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("wrote %s/interference.pbtxt\n", dir.c_str());
  return 0;
}

int Run() {
  if (!absl::GetFlag(FLAGS_profile_dir).empty()) {
    return RunOnProfileDir(absl::GetFlag(FLAGS_profile_dir),
                           absl::GetFlag(FLAGS_write_interference));
  }
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

  PrintInterferenceErrorTable(samples, absl::GetFlag(FLAGS_seed), stdout);
  // Transfer check: gpulet's own published coefficients (fitted by its
  // authors on other GPUs) applied unchanged to the V100 rows.
  for (const char* gpu : {"2080ti", "3080"}) {
    auto published = LoadGletInterferenceConstants(
        absl::GetFlag(FLAGS_glet_dir) + "/" + gpu + "/INT_MODEL_CONSTANT.CSV");
    if (!published.ok()) continue;
    const auto e = RelativeErrors(*published, samples);
    std::printf(
        "gpulet's published %s coefficients on all V100 rows: p50 %.1f%%  "
        "p90 %.1f%%  p95 %.1f%%\n",
        gpu, 100 * Percentile(e, .5), 100 * Percentile(e, .9),
        100 * Percentile(e, .95));
  }
  // What the published models predict on their own GPUs, from the
  // artifact's counters (UTIL.CSV): row = the model slowed down, column =
  // its neighbour, both at batch 8.
  for (const char* gpu : {"2080ti", "3080"}) {
    const std::string dir = absl::GetFlag(FLAGS_glet_dir) + "/" + gpu;
    auto published =
        LoadGletInterferenceConstants(dir + "/INT_MODEL_CONSTANT.CSV");
    auto util = LoadGletUtil(dir + "/UTIL.CSV");
    if (!published.ok() || !util.ok()) continue;
    std::printf(
        "\ngpulet's published %s model on its UTIL.CSV counters "
        "(batch 8; row slowed down by column):\n%-16s",
        gpu, "");
    for (const auto& [m, rows] : *util) std::printf(" %8.8s", m.c_str());
    std::printf("\n");
    for (const auto& [a, ra] : *util) {
      std::printf("%-16.16s", a.c_str());
      for (const auto& [b, rb] : *util) {
        if (!ra.count(8) || !rb.count(8)) {
          std::printf(" %8s", "-");
          continue;
        }
        const GletUtil& x = ra.at(8);
        const GletUtil& y = rb.at(8);
        std::printf(" %8.3f", published->FactorFromUtil(
                                  x.l2_percent / 100, y.l2_percent / 100,
                                  x.dram_percent / 100, y.dram_percent / 100));
      }
      std::printf("\n");
    }
  }
  std::printf("\n");
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
  tessera::SetUsage(
      "Fits interference models (constant, gpulet's linear model, Tessera's "
      "pairwise model) on the V100 co-location measurements, or on a "
      "profiler's pairs with --profile_dir, and prints the "
      "held-out error CDF (p50/p90/p95) for a random split, leave-one-model-"
      "pair-out and leave-one-(batch,share)-cell-out.");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
