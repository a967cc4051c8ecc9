#pragma once

#include <vector>

#include "scheduler/inss_cluster.h"

namespace tessera {

// InSS's provisioning decision (y, rho): a device and a share per model
// slot; -1 / 0 for slots that are not planned (no traffic).
struct InssProvisioning {
  std::vector<int> gpu;
  std::vector<double> share_percent;

  // The actor's action made feasible (the repair step of InSS's code, the
  // digest's pitfall 6: nothing in the paper enforces sum rho <= 100 %).
  // `gpu_choice[i]` in [0, K) and `level_choice[i]` in [1, U] per slot
  // (U = share_units); slots with active[i] false are not placed. On each
  // device the levels of its models are scaled so that all U units are
  // handed out (the whole device, as the code does): unit counts are the
  // largest remainders of level * U / sum(levels), at least one unit each.
  // Placement is balanced: a device holds at most ceil(n / K) of the n
  // models with traffic (and no more than its units); its surplus models,
  // the ones with the smallest levels, move to the device with the fewest
  // models; and no device stays empty while another holds two or more
  // (the crowded device's lowest-level model moves there: InSS maximises
  // throughput, so an idle GPU is never better). The paper leaves the
  // action's feasibility open (pitfall 6);
  // with per-model device heads sampled independently, an unbalanced
  // placement is the common random action, and a SAC agent trained
  // without this rule settled on plans worse than round-robin (docs/
  // scheduling.md). The heads still choose which models share a device
  // and how it is split.
  static InssProvisioning FromAction(const InssCluster& cluster,
                                     const std::vector<int>& gpu_choice,
                                     const std::vector<int>& level_choice,
                                     const std::vector<bool>& active);
};

}  // namespace tessera
