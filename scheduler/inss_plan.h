#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan.pb.h"
#include "scheduler/inss_batching.h"
#include "scheduler/inss_cluster.h"
#include "scheduler/inss_provisioning.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// Plans of the InSS family (inss, inss-ni, inss-rr, bda-gpulet): one
// gpulet per model, at its share and BDA's batch.
class InssPlan {
 public:
  // The provisioning of the plan in force when it is a `policy` plan that
  // places every slot with traffic on the cluster's devices; nullopt
  // otherwise. Its batch sizes go to `batches`.
  static std::optional<InssProvisioning> Current(
      const ClusterSnapshot& snapshot, const InssCluster& cluster,
      const std::string& policy, std::vector<int>* batches);

  static Plan Build(const InssCluster& cluster, const InssProvisioning& p,
                    const InssBatchResult& bda, const std::string& policy,
                    const std::string& reason);

  // A plan with no models: `policy`, "no traffic".
  static Plan Empty(const std::string& policy);
};

}  // namespace tessera
