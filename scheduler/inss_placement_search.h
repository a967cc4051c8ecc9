#pragma once

#include <cstdint>
#include <vector>

#include "scheduler/inss_cluster.h"
#include "scheduler/inss_provisioning.h"

namespace tessera {

// A search over InSS actions (a device and a share level per model) for
// the provisioning on which BDA batches the most uniform growth of the
// rates: the teacher an actor can be trained to imitate
// (tessera_inss_train --teacher=search, a Tessera addition) and the
// placement of the "bda-search" reference policy.
//  1. `random_draws` uniform actions (as bda-random draws them), each made
//     feasible by InssProvisioning::FromAction;
//  2. from the best, a local search: per model, every other device at its
//     level, every other level on its device, every split of units with
//     each model on its device, and a swap of devices with each model
//     elsewhere; the
//     best move is taken while it gains more than `min_gain`, for at most
//     `max_passes` passes;
//  3. a device's idle units go, one at a time, to the model whose extra
//     unit keeps the most room, while the room stays within `min_gain`
//     (among placements that tie, the one that gives devices out whole).
// A model alone on its device always gets all its units (alone, a larger
// share only makes it faster). Room is the largest multiple of the rates BDA
// batches, between 1 / `room_cap` and `room_cap` (1 % precision), so placements
// that cannot serve the rates yet are ranked too. The devices are
// interchangeable (InssCluster has one kind and one memory size), so the result
// numbers them in the order the slots first use them: one partition of the
// models is one action. Deterministic for a seed.
struct InssSearchOptions {
  int random_draws = 128;
  int max_passes = 8;
  double min_gain = 0.01;
  double room_cap = 64;
  uint64_t seed = 1;
};

class InssPlacementSearch {
 public:
  struct Result {
    // The action: per slot a device and a level in [1, U]; -1 and 0 for
    // slots without traffic. FromAction keeps it as is.
    std::vector<int> gpu;
    std::vector<int> level;
    InssProvisioning provisioning;
    // The multiple of the rates BDA batches on it (0: below
    // 1 / room_cap).
    double room = 0;
    int evaluations = 0;  // BDA calls
  };

  static Result Search(const InssCluster& cluster,
                       const std::vector<double>& rates_rps,
                       const InssSearchOptions& options);

  // The action FromAction turns into `p` unchanged (p itself a
  // FromAction result): its devices, and its shares in units.
  static void ActionOf(const InssCluster& cluster, const InssProvisioning& p,
                       std::vector<int>* gpu, std::vector<int>* level);

  // The largest multiple in [1 / cap, cap] of `rates_rps` that BDA
  // batches on `p` (1 % precision); 0 when not even 1 / cap.
  // `at_least`: only a room above it matters; below it the answer is 0
  // after a single BDA call.
  static double Room(const InssCluster& cluster, const InssProvisioning& p,
                     const std::vector<double>& rates_rps, double cap,
                     double at_least, int* evaluations);
};

}  // namespace tessera
