// tessera_profiler: measures L(b, p), memory and a memory-pressure stand-in
// for every model on real CPU partitions, then co-located pairs, fits the
// interference models and writes profiles/cpu/<model>.pbtxt (see
// tools/profiler.h). Resumable: cells already in the progress file are not
// measured again. --check compares existing profiles with fresh
// measurements instead of writing.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/cpu_affinity.h"
#include "common/percentile.h"
#include "common/progress_bar.h"
#include "common/text_proto.h"
#include "common/usage.h"
#include "perfmodel/interference_evaluation.h"
#include "tools/profiler.h"

ABSL_FLAG(std::string, model_repository, "models", "Model repository root.");
ABSL_FLAG(std::string, models, "", "Models to profile; empty: all.");
ABSL_FLAG(std::string, cores, "",
          "The device's cores, e.g. \"0-3\"; empty: every core this process "
          "may use.");
ABSL_FLAG(std::string, batches, "",
          "Batch sizes, e.g. \"1,4,8\"; empty: powers of two up to each "
          "model's max batch, and the max.");
ABSL_FLAG(int, warmup, 3, "Untimed batches before each cell.");
ABSL_FLAG(int, runs, 20, "Timed batches per cell.");
ABSL_FLAG(bool, pairs, true, "Also measure co-located pairs.");
ABSL_FLAG(std::string, out, "profiles",
          "Profile root: writes <out>/cpu/<model>.pbtxt, "
          "<out>/cpu/interference.pbtxt and <out>/cpu/pairs.csv.");
ABSL_FLAG(std::string, progress_file, "",
          "Cells measured so far (resume); default <out>/cpu/progress.csv.");
ABSL_FLAG(bool, fresh, false, "Forget the progress file and start over.");
ABSL_FLAG(bool, check, false,
          "Measure afresh and compare with the profiles in <out>/cpu "
          "(prediction error distribution); writes nothing there.");
ABSL_FLAG(std::string, proxy_binary, "",
          "Path of tessera_proxy; default: next to this binary.");

namespace tessera {
namespace {

std::string NextToSelf(const std::string& name) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / name).string();
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      return std::string(
          absl::StripAsciiWhitespace(line.substr(line.find(':') + 1)));
    }
  }
  return "unknown CPU";
}

void PrintErrors(const char* what, const std::vector<double>& e) {
  if (e.empty()) return;
  std::printf("%-34s n=%-4zu p50 %5.1f%%  p90 %5.1f%%  max %5.1f%%\n", what,
              e.size(), 100 * Percentile(e, .5), 100 * Percentile(e, .9),
              100 * Percentile(e, 1.0));
}

int Run() {
  Profiler::Options o;
  o.model_repository = absl::GetFlag(FLAGS_model_repository);
  o.models =
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipWhitespace());
  if (absl::GetFlag(FLAGS_cores).empty()) {
    auto own = GetCpuAffinity(0);
    if (!own.ok()) {
      std::fprintf(stderr, "%s\n", own.status().ToString().c_str());
      return 2;
    }
    o.cores = *own;
  } else {
    auto cores = ParseCoreList(absl::GetFlag(FLAGS_cores));
    if (!cores.ok()) {
      std::fprintf(stderr, "%s\n", cores.status().ToString().c_str());
      return 2;
    }
    o.cores = *cores;
  }
  for (absl::string_view b : absl::StrSplit(absl::GetFlag(FLAGS_batches), ',',
                                            absl::SkipWhitespace())) {
    int v;
    if (!absl::SimpleAtoi(b, &v) || v < 1) {
      std::fprintf(stderr, "bad --batches entry '%s'\n",
                   std::string(b).c_str());
      return 2;
    }
    o.batches.push_back(v);
  }
  o.warmup = absl::GetFlag(FLAGS_warmup);
  o.runs = absl::GetFlag(FLAGS_runs);
  o.pairs = absl::GetFlag(FLAGS_pairs);
  o.proxy_binary = absl::GetFlag(FLAGS_proxy_binary);
  if (o.proxy_binary.empty()) o.proxy_binary = NextToSelf("tessera_proxy");
  const std::string dir = absl::GetFlag(FLAGS_out) + "/cpu";
  std::filesystem::create_directories(dir);
  const bool check = absl::GetFlag(FLAGS_check);
  o.progress_file = absl::GetFlag(FLAGS_progress_file);
  if (o.progress_file.empty()) {
    o.progress_file =
        check ? absl::StrCat("/tmp/tessera_profile_check_", getpid(), ".csv")
              : dir + "/progress.csv";
  }
  if (absl::GetFlag(FLAGS_fresh) || check) {
    std::filesystem::remove(o.progress_file);
  }
  // Progress bar with an ETA from this run's pace.
  const absl::Time start = absl::Now();
  int first_done = -1;
  o.progress = [&](int done, int total) {
    if (first_done < 0) first_done = done;
    std::string eta = "--";
    if (done > first_done) {
      const double per =
          absl::ToDoubleSeconds(absl::Now() - start) / (done - first_done);
      eta = absl::StrFormat("%.0fs", per * (total - done));
    }
    std::fprintf(stderr, "\r%s %d/%d cells  ETA %s   ",
                 ProgressBar(done, total).c_str(), done, total, eta.c_str());
    if (done == total) std::fprintf(stderr, "\n");
  };
  auto result = Profiler::Run(o);
  if (!result.ok()) {
    std::fprintf(stderr, "\nprofiling failed: %s\n",
                 result.status().ToString().c_str());
    return 1;
  }

  if (check) {
    // Existing profiles' predictions against these fresh measurements.
    std::vector<double> solo, pair;
    std::map<std::string, LatencyModel> existing;
    for (const auto& [name, p] : result->profiles) {
      ModelProfile old;
      if (!ReadTextProto(dir + "/" + name + ".pbtxt", &old).ok()) continue;
      auto m = LatencyModel::FromProfile(old);
      if (m.ok()) existing.emplace(name, std::move(*m));
    }
    InterferenceProfile ip;
    std::unique_ptr<InterferenceModel> interference;
    if (ReadTextProto(dir + "/interference.pbtxt", &ip).ok() &&
        ip.linear_coefficients_size() == 5) {
      interference = std::make_unique<LinearInterference>(std::vector<double>(
          ip.linear_coefficients().begin(), ip.linear_coefficients().end()));
    }
    for (const auto& c : result->cells) {
      auto it = existing.find(c.model);
      if (it == existing.end() || c.latency_ms <= 0) continue;
      if (c.other.empty()) {
        solo.push_back(
            std::fabs(it->second.LatencyMs(c.batch, c.share) - c.latency_ms) /
            c.latency_ms);
      }
    }
    if (interference != nullptr) {
      for (const CoLocationSample& s : result->pairs) {
        auto self = existing.find(s.self.model->model());
        auto other = existing.find(s.other.model->model());
        if (self == existing.end() || other == existing.end()) continue;
        const Placement me{&self->second, s.self.batch, s.self.share_percent};
        const Placement them{&other->second, s.other.batch,
                             s.other.share_percent};
        pair.push_back(
            std::fabs(interference->LatencyMs(me, {them}) - s.latency_ms) /
            s.latency_ms);
      }
    }
    std::printf(
        "Profile check against %s (relative error of predicted "
        "latency):\n",
        dir.c_str());
    PrintErrors("solo L(b, p)", solo);
    PrintErrors("co-located (profile x interference)", pair);
    if (solo.empty()) std::printf("no existing profiles to check\n");
    return 0;
  }

  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  const std::string source = absl::StrCat(
      "tessera_profiler on ", host, " (", CpuModelName(), ", cores ",
      FormatCoreList(o.cores), "), ",
      absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone()),
      "; median/p99 of ", o.runs, " runs after ", o.warmup,
      " warm-up; dram_util_percent = slowdown of a memory-streaming stressor "
      "on the other cores (stand-in, see tools/profiler.h); memory = proxy "
      "RSS");
  for (auto& [name, profile] : result->profiles) {
    profile.set_source(source);
    const std::string path = dir + "/" + name + ".pbtxt";
    absl::Status s = WriteTextProto(path, profile);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("%s: %d cells, memory %.0f MiB -> %s\n", name.c_str(),
                profile.latency_size(), profile.memory_bytes() / 1048576.0,
                path.c_str());
    std::printf("  %6s %7s %10s %10s %10s %8s\n", "batch", "share%", "p50 ms",
                "p99 ms", "items/s", "dram%");
    for (const LatencyPoint& p : profile.latency()) {
      std::printf("  %6d %7.0f %10.3f %10.3f %10.1f %8.1f\n", p.batch_size(),
                  p.share_percent(), p.latency_ms(), p.latency_p99_ms(),
                  p.throughput_rps(), p.dram_util_percent());
    }
  }
  if (!result->pairs.empty()) {
    std::ofstream csv(dir + "/pairs.csv");
    csv << "model,batch,share,other,other_batch,other_share,latency_ms,"
           "other_latency_ms\n";
    for (const auto& c : result->cells) {
      if (c.other.empty()) continue;
      csv << c.model << "," << c.batch << "," << c.share << "," << c.other
          << "," << c.other_batch << "," << c.other_share << "," << c.latency_ms
          << "," << c.other_latency_ms << "\n";
    }
    std::printf("\n");
    PrintInterferenceErrorTable(result->pairs, 1, stdout);
    auto linear = LinearInterference::Fit(result->pairs);
    if (linear.ok()) {
      InterferenceProfile ip;
      ip.set_device_kind("cpu");
      for (double c : linear->coefficients()) ip.add_linear_coefficients(c);
      ip.set_source(source + "; gpulet's linear form fitted on " +
                    std::to_string(result->pairs.size()) + " pair samples");
      absl::Status s = WriteTextProto(dir + "/interference.pbtxt", ip);
      if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Tessera profiler: measures L(b, p) per model on real CPU partitions "
      "(the first k cores, k = 1..C), memory, a memory-pressure stand-in, "
      "and co-located pairs; fits the interference models; writes "
      "<out>/cpu/<model>.pbtxt. Resumes from its progress file.\n"
      "Example: tessera_profiler --model_repository=models --out=profiles\n"
      "Check:   tessera_profiler --check --runs=10");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
