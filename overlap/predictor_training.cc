#include "overlap/predictor_training.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tessera {

absl::StatusOr<GroupPredictorProto> TrainGroupPredictor(
    const ServiceCatalog& catalog, const std::string& device_kind,
    const std::vector<std::vector<MlpSample>>& by_size,
    const MlpTrainerOptions& options, std::vector<HeldoutError>* errors) {
  GroupPredictorProto proto;
  proto.set_device_kind(device_kind);
  for (int i = 0; i < catalog.size(); ++i) {
    proto.add_services(catalog.service(i).name);
  }
  int samples = 0;
  for (size_t size = 1; size < by_size.size(); ++size) {
    const std::vector<MlpSample>& all = by_size[size];
    if (all.size() < 5) {
      return absl::InvalidArgumentError(
          absl::StrCat("groups of ", size, ": ", all.size(),
                       " samples; at least 5 are needed to train and check"));
    }
    const size_t cut = all.size() * 4 / 5;
    const std::vector<MlpSample> fit(all.begin(), all.begin() + cut);
    const std::vector<MlpSample> heldout(all.begin() + cut, all.end());
    ASSIGN_OR_RETURN(Mlp mlp, TrainMlp(fit, options));
    const double mape = MeanAbsolutePercentageError(mlp, heldout);
    (*proto.mutable_mlp_by_group_size())[size] = mlp.proto();
    (*proto.mutable_heldout_mape_by_group_size())[size] = mape;
    if (errors != nullptr) {
      errors->push_back({static_cast<int>(size), static_cast<int>(fit.size()),
                         static_cast<int>(heldout.size()), mape});
    }
    samples += all.size();
  }
  proto.set_source(absl::StrCat(samples, " profiled groups, ", options.epochs,
                                " epochs, 3x", options.hidden_width,
                                " MLP per group size, 80/20 split"));
  return proto;
}

}  // namespace tessera
