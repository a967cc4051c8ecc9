#pragma once

// Hand-built InSS clusters for the inss tests.

#include <string>
#include <vector>

#include "inss.pb.h"
#include "scheduler/inss_environment.h"
#include "tests/scheduler/policy_test_util.h"

namespace tessera {
namespace testing {

inline InssCheckpointInfo InssInfo(const std::vector<std::string>& models,
                                   int gpus, double unit_percent = 10) {
  InssCheckpointInfo info;
  info.set_profile_key("test-gpu");
  info.set_gpus(gpus);
  for (const auto& m : models) info.add_models(m);
  info.set_max_models(static_cast<int>(models.size()));
  info.set_share_unit_percent(unit_percent);
  info.set_share_units(static_cast<int>(100 / unit_percent + 0.5));
  info.set_state_size(
      InssEnvironment::StateSize(static_cast<int>(models.size()), gpus));
  info.set_hidden1_size(8);
  info.set_hidden2_size(8);
  return info;
}

}  // namespace testing
}  // namespace tessera
