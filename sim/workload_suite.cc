#include "sim/workload_suite.h"

#include "absl/strings/str_format.h"

namespace tessera {

std::vector<Workload> V100Workloads() {
  const std::vector<std::string> all = {"alexnet", "resnet50", "vgg19", "ssd"};
  std::vector<Workload> w;
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = i + 1; j < all.size(); ++j) {
      w.push_back({all[i] + "+" + all[j], {all[i], all[j]}});
    }
  }
  w.push_back({"all four", all});
  // In the spirit of the gpulet paper's `game`: several instances of the
  // smallest model beside a large one.
  w.push_back({"game (3 alexnet + vgg19)",
               {"alexnet/1", "alexnet/2", "alexnet/3", "vgg19"}});
  w.push_back(
      {"game-small (2 alexnet + vgg19)", {"alexnet/1", "alexnet/2", "vgg19"}});
  // InSS's main experiment: 6 models on 4 GPUs (the paper does not say
  // which six; the V100 data has four, so two more alexnet instances).
  w.push_back(
      {"six (all four + 2 alexnet)",
       {"alexnet", "resnet50", "vgg19", "ssd", "alexnet/1", "alexnet/2"}});
  return w;
}

std::string SuiteCase::label() const {
  return absl::StrFormat("%s @%gx", workload.name, slo_factor);
}

std::vector<SuiteCase> RulesSuite() {
  const std::vector<Workload> workloads = V100Workloads();
  const double factors[] = {3, 5, 10};
  std::vector<SuiteCase> cases;
  for (size_t w = 0; w < workloads.size(); ++w) {
    for (size_t s = 0; s < 3; ++s) {
      cases.push_back({workloads[w], factors[s], (w + s) % 2 == 0});
    }
  }
  return cases;
}

}  // namespace tessera
