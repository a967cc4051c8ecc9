#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perfmodel/latency_model.h"

namespace tessera {

// A model running on a gpulet, as interference models see it.
struct Placement {
  const LatencyModel* model = nullptr;
  int batch = 1;
  double share_percent = 100;
};

// One measured co-location: `self` ran beside `other` on complementary
// partitions of one GPU, and took `latency_ms`.
struct CoLocationSample {
  Placement self;
  Placement other;
  double latency_ms = 0;
};

// Predicts how much slower a model runs when another model runs at the same
// time on another partition of the same GPU. The result is a multiplier
// >= 1 on the solo latency L(b, p). Immutable; thread-safe.
class InterferenceModel {
 public:
  virtual ~InterferenceModel() = default;
  virtual double Factor(const Placement& self,
                        const Placement& other) const = 0;
  virtual std::string name() const = 0;

  // Co-located latency: solo latency times the worst factor over the
  // neighbours (gpulet's rule: the slowest neighbour dominates).
  double LatencyMs(const Placement& self,
                   const std::vector<Placement>& neighbours) const;
};

// No interference: factor 1 (the "-noint" policies).
class NoInterference : public InterferenceModel {
 public:
  double Factor(const Placement&, const Placement&) const override {
    return 1.0;
  }
  std::string name() const override { return "none"; }
};

// A constant factor fitted to the data (the baseline any model must beat).
class ConstantInterference : public InterferenceModel {
 public:
  explicit ConstantInterference(double factor) : factor_(factor) {}
  static ConstantInterference Fit(const std::vector<CoLocationSample>& rows);
  double Factor(const Placement&, const Placement&) const override {
    return factor_;
  }
  std::string name() const override { return "constant"; }
  double factor() const { return factor_; }

 private:
  double factor_;
};

// gpulet's linear model (ATC'22 §3.4):
//   factor = c1 L2_self + c2 L2_other + c3 DRAM_self + c4 DRAM_other + c5
// with utilisations as fractions, measured solo at the placement's batch
// and share, clamped to >= 1.
class LinearInterference : public InterferenceModel {
 public:
  explicit LinearInterference(std::vector<double> coefficients)
      : c_(std::move(coefficients)) {}
  static absl::StatusOr<LinearInterference> Fit(
      const std::vector<CoLocationSample>& rows);
  double Factor(const Placement& self, const Placement& other) const override;
  // The same from utilisations given directly (fractions of peak).
  double FactorFromUtil(double l2_self, double l2_other, double dram_self,
                        double dram_other) const;
  std::string name() const override { return "gpulet-linear"; }
  const std::vector<double>& coefficients() const { return c_; }

 private:
  std::vector<double> c_;  // c1..c5
};

// Tessera's model: per model m that is slowed down, its own intercept and
// its own sensitivity to the neighbour's DRAM and L2 pressure, to its own
// batch size (log2) and to its own share; shared terms for the neighbour's
// share and batch size (log2); and an intercept per (model, neighbour
// model) pair seen in training. Fitted by ridge least squares on
// log(factor), so effects multiply:
//   log factor = a_m + s_m DRAM_other + t_m L2_other + u_m log2 b_self
//              + v_m share_self + k1 share_other + k2 log2 b_other + c_mn
// A model absent from training falls back to the average model's terms; a
// pair absent from training has c_mn = 0 (the ridge keeps the pair terms
// small, so the other terms carry what pairs share).
class PairwiseInterference : public InterferenceModel {
 public:
  static absl::StatusOr<PairwiseInterference> Fit(
      const std::vector<CoLocationSample>& rows, double ridge = 1e-3);
  double Factor(const Placement& self, const Placement& other) const override;
  std::string name() const override { return "pairwise"; }

 private:
  std::vector<double> Features(const Placement& self,
                               const Placement& other) const;

  std::map<std::string, int> models_;
  std::vector<double> w_;
};

}  // namespace tessera
