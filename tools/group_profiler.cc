#include "tools/group_profiler.h"

#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tessera {
namespace {

// Samples already measured, by size. A last line cut by an interruption
// (no newline) is removed from the file, so appending continues cleanly.
absl::StatusOr<std::vector<std::vector<MlpSample>>> ReadSamples(
    const std::string& path, int max_size, int width_base) {
  std::vector<std::vector<MlpSample>> by_size(max_size + 1);
  std::string text;
  {
    std::ifstream file(path, std::ios::binary);
    std::stringstream buffer;
    buffer << file.rdbuf();
    text = buffer.str();
  }
  if (!text.empty() && text.back() != '\n') {
    const size_t keep = text.rfind('\n');
    text.resize(keep == std::string::npos ? 0 : keep + 1);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::istringstream fields(line);
    int size = 0;
    MlpSample s;
    fields >> size >> s.latency_ms;
    float f;
    while (fields >> f) s.features.push_back(f);
    if (size < 1 || size > max_size ||
        static_cast<int>(s.features.size()) != width_base + 4 * size ||
        !(s.latency_ms > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no,
                       ": not a sample of these services (use --fresh "
                       "to start over)"));
    }
    by_size[size].push_back(std::move(s));
  }
  return by_size;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<MlpSample>>> ProfileGroupsResumable(
    const ServiceCatalog& catalog, const GroupProfilerOptions& options,
    const std::function<absl::StatusOr<double>(const OperatorGroup&)>& run_ms) {
  if (options.samples_file.empty()) {
    return absl::InvalidArgumentError("a samples file is required");
  }
  if (options.max_group_size < 1 || options.max_group_size > catalog.size() ||
      options.runs < 1 || options.groups_per_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "group sizes 1..", catalog.size(), ", runs and groups >= 1"));
  }
  std::vector<std::vector<MlpSample>> by_size(options.max_group_size + 1);
  if (!options.fresh) {
    ASSIGN_OR_RETURN(by_size,
                     ReadSamples(options.samples_file, options.max_group_size,
                                 catalog.size()));
  }
  std::ofstream out(options.samples_file,
                    options.fresh ? std::ios::trunc : std::ios::app);
  if (!out) {
    return absl::InvalidArgumentError("cannot write " + options.samples_file);
  }
  const int total = options.groups_per_size * options.max_group_size;
  int done = 0;
  for (int size = 1; size <= options.max_group_size; ++size) {
    done += std::min<int>(by_size[size].size(), options.groups_per_size);
  }
  if (options.progress) options.progress(done, total);
  std::vector<int> all(catalog.size());
  for (int i = 0; i < catalog.size(); ++i) all[i] = i;
  GroupSamplerOptions sampler;
  sampler.batch_sizes = {options.batch};
  for (int size = 1; size <= options.max_group_size; ++size) {
    for (int k = by_size[size].size(); k < options.groups_per_size; ++k) {
      std::mt19937_64 rng(options.seed * 1000003 + size * 10007 + k);
      const OperatorGroup group = SampleGroup(catalog, all, size, sampler, rng);
      RETURN_IF_ERROR(run_ms(group).status());  // warm-up
      std::vector<double> runs;
      for (int r = 0; r < options.runs; ++r) {
        ASSIGN_OR_RETURN(double ms, run_ms(group));
        runs.push_back(ms);
      }
      MlpSample s{catalog.Features(group), TrimmedMedianMs(runs)};
      out << size << " " << s.latency_ms;
      for (float f : s.features) out << " " << f;
      out << "\n" << std::flush;
      by_size[size].push_back(std::move(s));
      if (options.progress) options.progress(++done, total);
    }
  }
  return by_size;
}

absl::StatusOr<GroupPredictorProto> ProfileEmulatedA100(
    const A100GroundTruth& truth, const GroupProfilerOptions& options,
    const MlpTrainerOptions& train, std::vector<HeldoutError>* errors) {
  const ServiceCatalog& catalog = ServiceCatalog::A100();
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6};
  const std::vector<int> measured_together = {1, 2, 5, 6};
  std::mt19937_64 rng(options.seed);
  auto run = [&](const OperatorGroup& g) { return truth.SampleMs(g, rng); };
  const int max_size = std::min(options.max_group_size, 4);
  auto pairs = ProfileGroups(catalog, all, std::min(max_size, 2),
                             options.groups_per_size, options.runs,
                             GroupSamplerOptions{}, run, rng);
  if (options.progress) options.progress(1, max_size > 2 ? 2 : 1);
  std::vector<HeldoutError> pair_errors;
  ASSIGN_OR_RETURN(GroupPredictorProto proto,
                   TrainGroupPredictor(catalog, "emulated-a100", pairs, train,
                                       &pair_errors));
  for (const HeldoutError& e : pair_errors) errors->push_back(e);
  if (max_size <= 2) return proto;
  auto larger = ProfileGroups(catalog, measured_together, max_size,
                              options.groups_per_size, options.runs,
                              GroupSamplerOptions{}, run, rng);
  std::vector<HeldoutError> larger_errors;
  ASSIGN_OR_RETURN(GroupPredictorProto more,
                   TrainGroupPredictor(catalog, "emulated-a100", larger, train,
                                       &larger_errors));
  if (options.progress) options.progress(2, 2);
  for (const HeldoutError& e : larger_errors) {
    if (e.group_size <= 2) continue;
    errors->push_back(e);
    (*proto.mutable_mlp_by_group_size())[e.group_size] =
        more.mlp_by_group_size().at(e.group_size);
    (*proto.mutable_heldout_mape_by_group_size())[e.group_size] =
        more.heldout_mape_by_group_size().at(e.group_size);
  }
  proto.set_source(absl::StrCat(
      "emulated A100 (the authors' group latencies, 4.5 % noise): ",
      options.groups_per_size, " groups per size, trimmed median of ",
      options.runs,
      " runs; sizes 1-2 over the 7 services, 3-4 over "
      "resnet101, resnet152, vgg19, bert"));
  return proto;
}

}  // namespace tessera
