// tessera_group_profiler: the profiler mode of operator-group scheduling
// (Abacus) on the `cpu` device. Samples groups of the shipped segmentable
// models by instance-based sampling, runs each on this machine's cores with
// real LibTorch (each member's range on its own thread; tools/
// group_profiler.h), resumes from its samples file, then trains Tessera's
// group-latency predictor (one MLP per group size) and prints its held-out
// error: the non-circular check of the predictor, on groups that really
// ran.
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "common/text_proto.h"
#include "common/usage.h"
#include "overlap/predictor_training.h"
#include "proxy/torch_group_executor.h"
#include "tools/group_profiler.h"

ABSL_FLAG(std::string, model_repository, "models", "Model repository root.");
ABSL_FLAG(std::string, models, "resnet18,mobilenet_v3_small,bert_tiny",
          "Segmentable models (config segment_count > 0) to co-locate.");
ABSL_FLAG(int, batch, 1, "Batch of every query.");
ABSL_FLAG(int, max_group_size, 2,
          "Largest group (queries run at once; at most the models).");
ABSL_FLAG(int, groups, 300, "Groups profiled per group size.");
ABSL_FLAG(int, runs, 20, "Timed runs per group (after one warm-up run).");
ABSL_FLAG(int, threads_per_member, 1,
          "Intra-op threads of each query's range.");
ABSL_FLAG(std::string, samples, "build/group-samples.txt",
          "Samples file: appended to as groups are measured, read back to "
          "resume.");
ABSL_FLAG(bool, fresh, false, "Forget the samples file and start over.");
ABSL_FLAG(int, epochs, 250, "Training epochs per MLP.");
ABSL_FLAG(std::string, predictor_out, "",
          "Write the trained predictor here (GroupPredictorProto, text); "
          "empty: do not write.");

namespace tessera {
namespace {

int Run() {
  const std::vector<std::string> models =
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipEmpty());
  auto executor = TorchGroupExecutor::Create(
      absl::GetFlag(FLAGS_model_repository), models, absl::GetFlag(FLAGS_batch),
      absl::GetFlag(FLAGS_threads_per_member));
  if (!executor.ok()) {
    std::fprintf(stderr, "%s\n", executor.status().ToString().c_str());
    return 2;
  }
  GroupProfilerOptions options;
  options.max_group_size = absl::GetFlag(FLAGS_max_group_size);
  options.groups_per_size = absl::GetFlag(FLAGS_groups);
  options.runs = absl::GetFlag(FLAGS_runs);
  options.batch = absl::GetFlag(FLAGS_batch);
  options.samples_file = absl::GetFlag(FLAGS_samples);
  options.fresh = absl::GetFlag(FLAGS_fresh);
  options.progress = [](int done, int total) {
    std::fprintf(stderr, "\rgroups measured: %d/%d", done, total);
    if (done == total) std::fprintf(stderr, "\n");
  };
  const ServiceCatalog& catalog = (*executor)->catalog();
  auto samples = ProfileGroupsResumable(
      catalog, options,
      [&](const OperatorGroup& g) { return (*executor)->RunMs(g); });
  if (!samples.ok()) {
    std::fprintf(stderr, "\n%s\n", samples.status().ToString().c_str());
    return absl::IsInvalidArgument(samples.status()) ? 2 : 1;
  }
  MlpTrainerOptions train;
  train.epochs = absl::GetFlag(FLAGS_epochs);
  std::vector<HeldoutError> errors;
  auto predictor =
      TrainGroupPredictor(catalog, "cpu", *samples, train, &errors);
  if (!predictor.ok()) {
    std::fprintf(stderr, "%s\n", predictor.status().ToString().c_str());
    return 1;
  }
  std::printf("| group size | train | held-out | MAPE |\n|---|---|---|---|\n");
  for (const HeldoutError& e : errors) {
    std::printf("| %d | %d | %d | %.2f %% |\n", e.group_size, e.train,
                e.heldout, 100 * e.mape);
  }
  const std::string out = absl::GetFlag(FLAGS_predictor_out);
  if (!out.empty()) {
    const absl::Status written = WriteTextProto(out, *predictor);
    if (!written.ok()) {
      std::fprintf(stderr, "%s\n", written.ToString().c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Profiles operator groups of the segmentable models on this machine's "
      "cores (real LibTorch), resumably, and trains and checks Tessera's "
      "group-latency predictor (Abacus).");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
