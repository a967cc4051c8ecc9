#pragma once

// Predicts how long an operator group takes on one device: what the Abacus
// controller searches with. Tessera's implementation is learned from groups
// the profiler measured (GroupPredictorProto); tests use fakes.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "overlap.pb.h"
#include "overlap/mlp.h"
#include "overlap/service_catalog.h"

namespace tessera {

class GroupLatencyPredictor {
 public:
  virtual ~GroupLatencyPredictor() = default;
  // Predicted latency (ms) of each group, in order: the controller's
  // multi-way search asks for several candidates in one call.
  virtual std::vector<double> PredictMs(
      const std::vector<OperatorGroup>& groups) const = 0;
};

// One learned MLP per group size over the catalog's feature encoding.
class LearnedGroupPredictor : public GroupLatencyPredictor {
 public:
  // Validates every MLP's input width against the catalog.
  static absl::StatusOr<LearnedGroupPredictor> Create(
      const ServiceCatalog& catalog, const GroupPredictorProto& proto);

  std::vector<double> PredictMs(
      const std::vector<OperatorGroup>& groups) const override;
  int max_group_size() const { return by_size_.rbegin()->first; }

 private:
  LearnedGroupPredictor(const ServiceCatalog& catalog,
                        std::map<int, Mlp> by_size)
      : catalog_(&catalog), by_size_(std::move(by_size)) {}
  const ServiceCatalog* catalog_;
  std::map<int, Mlp> by_size_;
};

}  // namespace tessera
