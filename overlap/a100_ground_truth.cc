#include "overlap/a100_ground_truth.h"

#include <algorithm>

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tessera {
namespace {

const std::vector<std::string> kLayers = {"hidden1", "hidden2", "hidden3",
                                          "predict"};

absl::StatusOr<Mlp> Load(const std::string& path, int group_size) {
  ASSIGN_OR_RETURN(StateDict dict, ReadTorchCheckpoint(path));
  ASSIGN_OR_RETURN(Mlp mlp, Mlp::FromStateDict(dict, kLayers));
  const int want = ServiceCatalog::A100().size() + 4 * group_size;
  if (mlp.inputs() != want) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": takes ", mlp.inputs(), " inputs, a group of ",
                     group_size, " needs ", want));
  }
  return mlp;
}

}  // namespace

absl::StatusOr<std::unique_ptr<A100GroundTruth>> A100GroundTruth::Create(
    const std::string& data_dir, int max_group_size) {
  if (max_group_size < 1 || max_group_size > 4) {
    return absl::InvalidArgumentError(
        "the A100 data covers groups of 1 to 4 queries");
  }
  std::map<int, Mlp> by_size;
  ASSIGN_OR_RETURN(Mlp pair, Load(data_dir + "/A100-2in7.ckpt", 2));
  by_size.emplace(2, std::move(pair));
  if (max_group_size >= 3) {
    ASSIGN_OR_RETURN(Mlp triplet, Load(data_dir + "/A100-3in4.ckpt", 3));
    by_size.emplace(3, std::move(triplet));
  }
  if (max_group_size == 4) {
    ASSIGN_OR_RETURN(Mlp quadruplet, Load(data_dir + "/A100-4in4.ckpt", 4));
    by_size.emplace(4, std::move(quadruplet));
  }
  return std::unique_ptr<A100GroundTruth>(
      new A100GroundTruth(std::move(by_size)));
}

bool A100GroundTruth::Covers(const std::vector<int>& services) const {
  const int n = static_cast<int>(services.size());
  if (n <= 2) return n >= 1;
  if (by_size_.count(n) == 0) return false;
  for (int s : services) {
    if (s != 1 && s != 2 && s != 5 && s != 6) return false;
  }
  return true;
}

double A100GroundTruth::MeanMs(const OperatorGroup& group,
                               bool* extrapolated) const {
  std::vector<int> services;
  for (const GroupMember& m : group) services.push_back(m.service);
  ABSL_RAW_CHECK(Covers(services), "group outside the A100 data");
  OperatorGroup g = group;
  if (g.size() == 1) {
    const int partner = g[0].service == 0 ? 1 : 0;
    g.push_back(GroupMember{partner, 0, 0, g[0].batch, 0});
  }
  if (extrapolated != nullptr) *extrapolated = group.size() == 1;
  const Mlp& mlp = by_size_.at(static_cast<int>(g.size()));
  return mlp.Predict(ServiceCatalog::A100().Features(g));
}

double A100GroundTruth::SampleMs(const OperatorGroup& group,
                                 std::mt19937_64& rng) const {
  const double mean = MeanMs(group);
  std::normal_distribution<double> noise(1.0, kNoiseFraction);
  return mean * std::max(0.05, noise(rng));
}

}  // namespace tessera
