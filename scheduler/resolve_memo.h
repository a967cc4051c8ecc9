#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "perfmodel/interference_model.h"
#include "scheduler/gpu_layout.h"

namespace tessera {

// A memo of GpuLayout::Resolve over one planning call. A plan's check
// resolves the same GPU (the same partitions, models and rates) many
// times: replicas within a plan, the same GPU in several candidates, and
// every step of a margin's bisection that lands on the same rates.
// Resolve is a pure function of the layout's slots, its two settings and
// the interference model, so an unsolved layout equal to one resolved
// before gets that answer.
//
// Demands are keyed by address: use one memo only for layouts whose
// slices point at demands that outlive it (PolicyInputs' own). Not
// thread-safe, like the rest of a planning call.
class ResolveMemo {
 public:
  // layout->Resolve(interference), answered from the memo where it can
  // be. A layout with a solved slot is resolved directly. After a failure
  // answered from the memo the slots are untouched.
  bool Resolve(const InterferenceModel* interference, GpuLayout* layout);

  int hits() const { return hits_; }
  int misses() const { return misses_; }

 private:
  using SliceKey = std::tuple<const ModelDemand*, double>;
  using SlotKey = std::tuple<double, std::vector<SliceKey>>;
  using Key =
      std::tuple<const InterferenceModel*, bool, double, std::vector<SlotKey>>;
  // The resolved schedule of each slot; nullopt: Resolve failed.
  std::map<Key, std::optional<std::vector<GpuletSchedule>>> memo_;
  int hits_ = 0;
  int misses_ = 0;
};

}  // namespace tessera
