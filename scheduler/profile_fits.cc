#include "scheduler/profile_fits.h"

#include <algorithm>

#include "perfmodel/latency_model.h"
#include "scheduler/igniter_policy.h"
#include "scheduler/las_policy.h"

namespace tessera {

ProfileFits ProfileFits::Build(const std::vector<ModelSnapshot>& models,
                               const PlanningRules& rules) {
  ProfileFits fits;
  const double igniter_scale = rules.igniter().latency_headroom();
  const double las_scale = rules.las().latency_headroom();
  for (const ModelSnapshot& m : models) {
    for (const auto& [kind, profile] : m.profiles) {
      const std::string key = KeyOf(profile);
      auto it = fits.models_.find(key);
      if (it == fits.models_.end()) {
        auto built = LatencyModel::FromProfile(profile);
        if (!built.ok()) continue;
        it = fits.models_.emplace(key, *std::move(built)).first;
      }
      const LatencyModel* lm = &it->second;
      // The batch limit PolicyInputs gives the model's demand.
      const int max_batch =
          std::min(std::max(1, m.config.max_batch_size()), lm->max_batch());
      Key k{key, max_batch, igniter_scale};
      if (!fits.igniter_.count(k)) {
        IgniterFit fit;
        auto w = IgniterPolicy::FitWorkload(*lm, igniter_scale, max_batch,
                                            &fit.worst_fit_error);
        if (w.ok()) {
          fit.workload = *std::move(w);
          fits.igniter_.emplace(std::move(k), std::move(fit));
        }
      }
      k = Key{key, max_batch, las_scale};
      if (!fits.las_.count(k)) {
        auto c = LasPolicy::FitModel(*lm, las_scale, max_batch);
        if (c.ok()) fits.las_.emplace(std::move(k), *c);
      }
    }
  }
  return fits;
}

std::string ProfileFits::KeyOf(const ModelProfile& profile) {
  return profile.SerializeAsString();
}

const LatencyModel* ProfileFits::FindModel(
    const std::string& profile_key) const {
  auto it = models_.find(profile_key);
  return it == models_.end() ? nullptr : &it->second;
}

const ProfileFits::IgniterFit* ProfileFits::FindIgniter(
    const std::string& profile_key, int max_batch, double latency_scale) const {
  auto it = igniter_.find(Key{profile_key, max_batch, latency_scale});
  return it == igniter_.end() ? nullptr : &it->second;
}

const LasCoefficients* ProfileFits::FindLas(const std::string& profile_key,
                                            int max_batch,
                                            double latency_scale) const {
  auto it = las_.find(Key{profile_key, max_batch, latency_scale});
  return it == las_.end() ? nullptr : &it->second;
}

int ProfileFits::size() const {
  return static_cast<int>(igniter_.size() + las_.size());
}

}  // namespace tessera
