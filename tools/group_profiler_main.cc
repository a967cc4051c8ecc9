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
#include "overlap/a100_ground_truth.h"
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
ABSL_FLAG(std::string, device, "cpu",
          "cpu: real groups of --models on this machine's cores (LibTorch). "
          "cuda: the same on GPU 0, a CUDA stream per query (a CUDA "
          "LibTorch; under MPS at 100 % as Abacus runs). "
          "emulated-a100: the seven A100 services, each run a draw from "
          "the authors' group latencies (--a100_ground_truth_dir); batch 4, "
          "BERT at 8-64 tokens; --models, --batch, --threads_per_member and "
          "--samples do not apply.");
ABSL_FLAG(std::string, a100_ground_truth_dir, "../shared/data/abacus-a100",
          "The Abacus authors' A100 checkpoints (--device=emulated-a100).");
ABSL_FLAG(std::string, predictor_out, "",
          "Write the trained predictor here (GroupPredictorProto, text); "
          "empty: do not write.");

namespace tessera {
namespace {

int Report(const absl::StatusOr<GroupPredictorProto>& predictor,
           const std::vector<HeldoutError>& errors) {
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

GroupProfilerOptions ProfilerOptions() {
  GroupProfilerOptions options;
  options.max_group_size = absl::GetFlag(FLAGS_max_group_size);
  options.groups_per_size = absl::GetFlag(FLAGS_groups);
  options.runs = absl::GetFlag(FLAGS_runs);
  options.batch = absl::GetFlag(FLAGS_batch);
  options.samples_file = absl::GetFlag(FLAGS_samples);
  options.fresh = absl::GetFlag(FLAGS_fresh);
  return options;
}

MlpTrainerOptions TrainerOptions() {
  MlpTrainerOptions train;
  train.epochs = absl::GetFlag(FLAGS_epochs);
  return train;
}

int RunEmulatedA100() {
  auto truth =
      A100GroundTruth::Create(absl::GetFlag(FLAGS_a100_ground_truth_dir), 4);
  if (!truth.ok()) {
    std::fprintf(stderr, "%s\n", truth.status().ToString().c_str());
    return 2;
  }
  GroupProfilerOptions options = ProfilerOptions();
  options.progress = [](int done, int total) {
    std::fprintf(stderr, "profiled and trained: %d/%d\n", done, total);
  };
  std::vector<HeldoutError> errors;
  return Report(
      ProfileEmulatedA100(**truth, options, TrainerOptions(), &errors), errors);
}

// Real groups with LibTorch, on `device` ("cpu" or "cuda").
int RunTorch(const std::string& device) {
  const std::vector<std::string> models =
      absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipEmpty());
  auto executor = TorchGroupExecutor::Create(
      absl::GetFlag(FLAGS_model_repository), models, absl::GetFlag(FLAGS_batch),
      absl::GetFlag(FLAGS_threads_per_member), device == "cuda");
  if (!executor.ok()) {
    std::fprintf(stderr, "%s\n", executor.status().ToString().c_str());
    return 2;
  }
  GroupProfilerOptions options = ProfilerOptions();
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
  std::vector<HeldoutError> errors;
  return Report(
      TrainGroupPredictor(catalog, device, *samples, TrainerOptions(), &errors),
      errors);
}

int Run() {
  const std::string device = absl::GetFlag(FLAGS_device);
  if (device == "emulated-a100") return RunEmulatedA100();
  if (device == "cpu" || device == "cuda") return RunTorch(device);
  std::fprintf(stderr,
               "--device must be cpu, cuda or emulated-a100, not '%s'\n",
               device.c_str());
  return 2;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  tessera::SetUsage(
      "Profiles operator groups of the segmentable models on this machine's "
      "cores (real LibTorch), resumably, or on the emulated A100 "
      "(--device=emulated-a100), and trains and checks Tessera's "
      "group-latency predictor (Abacus).\n"
      "Example: tessera_group_profiler --device=emulated-a100 "
      "--max_group_size=4 --predictor_out=build/a100-predictor.pbtxt");
  absl::ParseCommandLine(argc, argv);
  return tessera::Run();
}
