#pragma once

#include <map>
#include <string>
#include <vector>

#include "perfmodel/igniter_model.h"
#include "perfmodel/las_model.h"
#include "perfmodel/latency_model.h"
#include "policy_rules.pb.h"
#include "profile.pb.h"
#include "scheduler/scheduling_policy.h"

namespace tessera {

// What the policies derive from the profiles and the papers derive once,
// offline: each profile's LatencyModel (LatencyModel::FromProfile), and
// the latency-model fits of iGniter (k1..k5 and the L2 line,
// IgniterPolicy::FitWorkload) and LAS (Eq. 3-4, LasPolicy::FitModel).
// The caller makes them when profiles load and hands them to the policies
// in PolicyOptions.fits, so a plan does not rebuild them on every call.
// Immutable once built.
//
// Everything is found only for the exact profile (by its serialized
// bytes) and, for a fit, the batch limit and latency scale it was made
// for; a policy that finds none (a profile changed since, rules with
// another headroom) builds its own, so a plan never depends on whether
// fits were supplied.
class ProfileFits {
 public:
  struct IgniterFit {
    IgniterWorkload workload;  // without alpha_cache (plan-dependent)
    double worst_fit_error = 0;
  };

  // Fits every profile of `models` (each device kind), at the batch limit
  // a plan gives the model (its config's, within the profile's) and at
  // iGniter's and LAS's latency headroom in `rules`. A profile a fit
  // refuses gets no entry: the policy reports the error when it plans.
  static ProfileFits Build(const std::vector<ModelSnapshot>& models,
                           const PlanningRules& rules);

  // The key a profile is found by.
  static std::string KeyOf(const ModelProfile& profile);

  const LatencyModel* FindModel(const std::string& profile_key) const;
  const IgniterFit* FindIgniter(const std::string& profile_key, int max_batch,
                                double latency_scale) const;
  const LasCoefficients* FindLas(const std::string& profile_key, int max_batch,
                                 double latency_scale) const;
  // Fits held, iGniter's and LAS's together (latency models aside).
  int size() const;

 private:
  struct Key {
    std::string profile;
    int max_batch = 1;
    double latency_scale = 1;
    bool operator<(const Key& o) const {
      if (max_batch != o.max_batch) return max_batch < o.max_batch;
      if (latency_scale != o.latency_scale) {
        return latency_scale < o.latency_scale;
      }
      return profile < o.profile;
    }
  };
  std::map<std::string, LatencyModel> models_;
  std::map<Key, IgniterFit> igniter_;
  std::map<Key, LasCoefficients> las_;
};

}  // namespace tessera
