#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "datasets/igniter_v100_data.h"
#include "perfmodel/interference_model.h"
#include "perfmodel/latency_model.h"

namespace tessera {

// What the simulated devices really do, independent of the models the
// policies plan with:
//  * solo latency interpolates the measured profile (LatencyModel);
//  * co-located latency is solo latency times the *measured* slowdown of
//    the two models at those batch sizes and shares, interpolated
//    bilinearly in (log2 b_self, log2 b_other) between measured batches at
//    the nearest measured share.
// Rules outside the measured grid (documented in docs/simulator.md):
//  * batch 1 (not co-measured): the factor measured at batch 2;
//  * a neighbour that is idle: no slowdown;
//  * a pair never measured together (e.g. the same model twice): the mean
//    factor of the slowed model over its measured partners in that cell;
//    a model with no measurement at all: no slowdown.
// Several busy neighbours (three or more partitions on a GPU, as iGniter
// and LAS plan): the measured pairwise slowdowns f_k of the model beside
// each neighbour k combine by CorunnerRule, by default kSumOfExcess:
// factor = 1 + sum_k (f_k - 1) (every co-runner adds its own contention,
// the rule of LAS's I(X) and InSS's t_inf). The public V100 data measures
// pairs only, so the rule's error beyond two co-runners cannot be checked
// against measurements; the experiments report the comparison with at most
// two partitions per GPU as well (docs/scheduling.md).
// Optional multiplicative noise (log-normal, relative sigma).
class GroundTruth {
 public:
  enum class CorunnerRule {
    kSumOfExcess,  // 1 + sum (f_k - 1)
    kProduct,      // prod f_k
    kMax,          // max f_k (gpulet's "worst neighbour dominates")
  };
  // A gpulet running beside the model, at the moment its batch starts.
  struct Corunner {
    const std::string* model = nullptr;
    int batch = 1;
  };

  GroundTruth(std::map<std::string, LatencyModel> models,
              const std::vector<IgniterCoLocationRow>& rows,
              double noise_sigma = 0);
  // A device whose slowdowns follow `interference` (e.g. the emulated GPU,
  // whose backend applies the linear model of profiles/emulated) instead
  // of measured rows; the neighbour runs at 100% minus the model's share.
  GroundTruth(std::map<std::string, LatencyModel> models,
              std::shared_ptr<const InterferenceModel> interference,
              double noise_sigma = 0);

  // "sum" (kSumOfExcess), "product" or "max"; INVALID_ARGUMENT otherwise.
  static absl::StatusOr<CorunnerRule> ParseCorunnerRule(absl::string_view s);
  void set_corunner_rule(CorunnerRule rule) { corunner_rule_ = rule; }
  CorunnerRule corunner_rule() const { return corunner_rule_; }

  const LatencyModel* model(const std::string& name) const;
  // Latency of `model` at (batch, share) while `other` (nullptr: nothing)
  // runs at batch `other_batch` on the other partition of the same GPU
  // (the measured rows pair complementary shares, so its share follows).
  double LatencyMs(const std::string& model, int batch, double share,
                   const std::string* other, int other_batch,
                   std::mt19937_64* rng) const;
  // The same beside any number of busy co-runners (CorunnerRule).
  double LatencyMs(const std::string& model, int batch, double share,
                   const std::vector<Corunner>& corunners,
                   std::mt19937_64* rng) const;
  // The combined slowdown factor beside `corunners` (1 for none).
  double CombinedFactor(const std::string& model, int batch, double share,
                        const std::vector<Corunner>& corunners) const;
  // The measured slowdown factor used above (>= some value near 1).
  double Factor(const std::string& model, int batch, double share,
                const std::string& other, int other_batch) const;

 private:
  // (self, other, share_self) -> (b_self, b_other) -> factor
  using Cell = std::map<std::pair<int, int>, double>;
  double CellFactor(const Cell& cell, int b, int b2) const;

  std::map<std::string, LatencyModel> models_;
  std::map<std::tuple<std::string, std::string, int>, Cell> measured_;
  // (self, share_self) -> (b_self, b_other) -> mean factor over partners
  std::map<std::pair<std::string, int>, Cell> mean_;
  std::vector<int> shares_;
  std::shared_ptr<const InterferenceModel> interference_;
  double noise_sigma_;
  CorunnerRule corunner_rule_ = CorunnerRule::kSumOfExcess;
};

}  // namespace tessera
