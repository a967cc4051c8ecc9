#pragma once

// Profiler mode of operator-group scheduling (Abacus): samples groups of a
// device's services by instance-based sampling, measures each on the device
// (a warm-up run, then `runs` timed runs; label: the trimmed median) and
// appends it to a samples file, so an interrupted profile resumes where it
// stopped. Device-agnostic: the caller passes how to run a group.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "overlap.pb.h"
#include "overlap/a100_ground_truth.h"
#include "overlap/group_sampler.h"
#include "overlap/mlp_trainer.h"
#include "overlap/predictor_training.h"
#include "overlap/service_catalog.h"

namespace tessera {

struct GroupProfilerOptions {
  int max_group_size = 2;
  int groups_per_size = 300;
  int runs = 20;
  int batch = 1;
  // One line per measured group: "<size> <label_ms> <features...>".
  std::string samples_file;
  bool fresh = false;  // forget the samples file and start over
  uint64_t seed = 1;
  // Called after every measured group (done, total) and once at start.
  std::function<void(int, int)> progress;
};

// Measures the groups the samples file does not have yet and returns every
// sample by group size (index 0 unused). Group k of size s is the same
// group whether or not the profile was interrupted before it.
absl::StatusOr<std::vector<std::vector<MlpSample>>> ProfileGroupsResumable(
    const ServiceCatalog& catalog, const GroupProfilerOptions& options,
    const std::function<absl::StatusOr<double>(const OperatorGroup&)>& run_ms);

// The emulated A100's profile (no device to wait for: each run is a draw
// from the ground truth): groups of one and two over all seven services,
// of three and four over {resnet101, resnet152, vgg19, bert} (what the
// authors measured), `groups_per_size` each at batch 4 and sequence
// lengths 8-64, labelled by the trimmed median of `runs` draws; then one
// predictor for all group sizes. `errors` gets the held-out error per size.
absl::StatusOr<GroupPredictorProto> ProfileEmulatedA100(
    const A100GroundTruth& truth, const GroupProfilerOptions& options,
    const MlpTrainerOptions& train, std::vector<HeldoutError>* errors);

}  // namespace tessera
