// The KAIST latency-aware scheduler's latency model against values worked
// out by hand from its equations, and the two-step fit.
#include "perfmodel/las_model.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(LasModelTest, EquationsByHand) {
  LasCoefficients c;
  c.alpha = 1;
  c.beta = 0.1;
  c.gamma = 0;
  c.delta = 2;
  c.omega = 3;
  c.xi = 1;
  c.kappa = 2;
  // Eq. 4 at b = 2: (2 + 1) e^-0.2 + 2 * 2 + 3.
  EXPECT_NEAR(LasModel::BaseMs(c, 2), 9.456192259233946, 1e-12);
  // Eq. 3 at p = 0.5: e^(1 * 0.5^2); d(1) = 1.
  EXPECT_NEAR(LasModel::Degradation(c, 50), 1.2840254166877414, 1e-12);
  EXPECT_DOUBLE_EQ(LasModel::Degradation(c, 100), 1.0);
  EXPECT_NEAR(LasModel::ProcMs(c, 2, 50), 12.141991205942261, 1e-9);
  // Eq. 6: lambda = 0.1 / ms, t = 10 ms, b = 2: 0.1 * 100 / (2 (2 - 1)).
  EXPECT_DOUBLE_EQ(LasModel::QueueMs(100, 2, 10), 5.0);
  // Unstable: lambda t = b.
  EXPECT_TRUE(std::isinf(LasModel::QueueMs(200, 2, 10)));
  // Without a compute term only the memory term is left.
  c.compute_term = false;
  EXPECT_DOUBLE_EQ(LasModel::BaseMs(c, 2), 7.0);
}

TEST(LasModelTest, FitRecoversTheCurve) {
  LasCoefficients truth;
  truth.alpha = 2;
  truth.beta = -0.05;  // growing compute term
  truth.gamma = 0.5;
  truth.delta = 0.3;
  truth.omega = 1;
  truth.xi = 1.5;
  truth.kappa = 3;
  std::vector<LasSample> samples;
  for (double p : {20.0, 40.0, 60.0, 80.0, 100.0}) {
    for (int b = 1; b <= 16; ++b) {
      samples.push_back({b, p, LasModel::ProcMs(truth, b, p)});
    }
  }
  auto fit = FitLasModel(samples);
  ASSERT_TRUE(fit.ok()) << fit.status();
  for (double p : {30.0, 50.0, 100.0}) {
    for (int b : {1, 5, 12}) {
      EXPECT_NEAR(LasModel::ProcMs(*fit, b, p) / LasModel::ProcMs(truth, b, p),
                  1.0, 0.01)
          << "b " << b << " p " << p;
    }
  }
  // No sample at 100 %: refused.
  std::vector<LasSample> partial(samples.begin(), samples.begin() + 16);
  EXPECT_EQ(FitLasModel(partial).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
