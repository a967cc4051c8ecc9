#pragma once

#include <vector>

#include "scheduler/inss_cluster.h"

namespace tessera {

// InSS's provisioning decision (y, rho): a device and a share per model
// slot; -1 / 0 for slots that are not planned (no traffic).
struct InssProvisioning {
  std::vector<int> gpu;
  std::vector<double> share_percent;

  // The actor's action made feasible with the smallest change, never by
  // overriding a feasible choice (the paper leaves the action's
  // feasibility open, the digest's pitfall 6). `gpu_choice[i]` in [0, K)
  // and `level_choice[i]` in [1, U] per slot (U = share_units; out of
  // range: clamped); slots with active[i] false are not placed. Model i
  // goes to device gpu_choice[i] with level_choice[i] units, unless its
  // device breaks a constraint:
  //  * memory: while a device's models exceed its memory, its lowest-level
  //    model moves to the device with the most free memory that holds it
  //    (an empty one when it fits beside nothing); when none does, it
  //    stays and BDA reports the memory;
  //  * units: a device holding more models than U units moves its
  //    lowest-level models to the device with the fewest;
  //  * share sum: a device whose levels sum past U hands its U units out
  //    in proportion to the levels (one unit each, the rest by largest
  //    remainder), so the actor's ratios hold.
  // A device whose levels sum to U or less keeps them as chosen (units
  // left over stay idle: that is the actor's choice), and devices may stay
  // empty.
  static InssProvisioning FromAction(const InssCluster& cluster,
                                     const std::vector<int>& gpu_choice,
                                     const std::vector<int>& level_choice,
                                     const std::vector<bool>& active);

  // FromAction on the training environment's flat action: n device
  // choices, then n 0-based level indices; a slot is active when its rate
  // is above 0.
  static InssProvisioning FromFlatAction(const InssCluster& cluster,
                                         const std::vector<int>& action,
                                         const std::vector<double>& rates_rps);
};

}  // namespace tessera
