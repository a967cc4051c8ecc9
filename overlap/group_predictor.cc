#include "overlap/group_predictor.h"

#include "absl/base/internal/raw_logging.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tessera {

absl::StatusOr<LearnedGroupPredictor> LearnedGroupPredictor::Create(
    const ServiceCatalog& catalog, const GroupPredictorProto& proto) {
  if (proto.mlp_by_group_size().empty()) {
    return absl::InvalidArgumentError("the predictor has no MLP");
  }
  std::map<int, Mlp> by_size;
  for (const auto& [size, mlp_proto] : proto.mlp_by_group_size()) {
    ASSIGN_OR_RETURN(Mlp mlp, Mlp::FromProto(mlp_proto));
    if (size < 1 || mlp.inputs() != catalog.size() + 4 * size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the MLP for groups of ", size, " takes ", mlp.inputs(),
          " inputs; the catalog's encoding needs ", catalog.size() + 4 * size));
    }
    by_size.emplace(size, std::move(mlp));
  }
  for (int k = 1; k <= by_size.rbegin()->first; ++k) {
    if (by_size.count(k) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("the predictor has no MLP for groups of ", k));
    }
  }
  return LearnedGroupPredictor(catalog, std::move(by_size));
}

std::vector<double> LearnedGroupPredictor::PredictMs(
    const std::vector<OperatorGroup>& groups) const {
  std::vector<double> out;
  out.reserve(groups.size());
  for (const OperatorGroup& g : groups) {
    auto it = by_size_.find(static_cast<int>(g.size()));
    ABSL_RAW_CHECK(it != by_size_.end(), "no MLP for this group size");
    out.push_back(it->second.Predict(catalog_->Features(g)));
  }
  return out;
}

}  // namespace tessera
