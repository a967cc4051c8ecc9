#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "perfmodel/igniter_v100_data.h"
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
// GPUs hold at most two gpulets here, so at most one neighbour runs.
// Optional multiplicative noise (log-normal, relative sigma).
class GroundTruth {
 public:
  GroundTruth(std::map<std::string, LatencyModel> models,
              const std::vector<IgniterCoLocationRow>& rows,
              double noise_sigma = 0);
  // A device whose slowdowns follow `interference` (e.g. the emulated GPU,
  // whose backend applies the linear model of profiles/emulated) instead
  // of measured rows; the neighbour runs at 100% minus the model's share.
  GroundTruth(std::map<std::string, LatencyModel> models,
              std::shared_ptr<const InterferenceModel> interference,
              double noise_sigma = 0);

  const LatencyModel* model(const std::string& name) const;
  // Latency of `model` at (batch, share) while `other` (nullptr: nothing)
  // runs at batch `other_batch` on the other partition of the same GPU
  // (the measured rows pair complementary shares, so its share follows).
  double LatencyMs(const std::string& model, int batch, double share,
                   const std::string* other, int other_batch,
                   std::mt19937_64* rng) const;
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
};

}  // namespace tessera
