// iGniter's performance model against values worked out by hand from its
// equations, the k1..k5 fit, and the coefficients fitted from the public
// V100 inputs (read from ../shared/data at run time; skipped, saying so,
// where absent).
#include "perfmodel/igniter_model.h"

#include <cmath>
#include <filesystem>

#include "datasets/igniter_coefficients.h"
#include "datasets/igniter_evaluation.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

const char kCoefficients[] =
    TESSERA_SHARED_DIR "/data/igniter-v100/coefficients.jsonl";

IgniterHardware HandHardware() {
  IgniterHardware hw;
  hw.power_enabled = true;
  hw.idle_power_w = 50;
  hw.max_power_w = 200;
  hw.max_clock_mhz = 1000;
  hw.alpha_f_mhz_per_w = -2;
  hw.scheduling_enabled = true;
  hw.alpha_sch_ms = 0.01;
  hw.beta_sch_ms = -0.01;
  hw.bandwidth_bytes_per_ms = 1000;
  return hw;
}

TEST(IgniterModelTest, PredictMatchesHandComputation) {
  IgniterWorkload w1;
  w1.input_bytes = 100;
  w1.output_bytes = 50;
  w1.kernels = 10;
  w1.solo_sched_ms = 0.5;
  w1.k = {0, 10, 0, 0, 1};  // k_act(2, 50 %) = 20 / 50 + 1 = 1.4 ms
  w1.alpha_l2 = 0.01;       // c = 0.01 * 2000 / 1.4 + 1 = 15.2857 %
  w1.beta_l2 = 1;
  w1.alpha_power = 0.1;  // p = 0.1 * 1428.57 + 5 = 147.857 W
  w1.beta_power = 5;
  w1.alpha_cache = 0.02;
  IgniterWorkload w2;
  w2.k = {0, 0, 40, 0, 0};  // k_act(1, 40 %) = 1 ms
  w2.beta_l2 = 10;          // c = 10 %
  w2.beta_power = 60;       // p = 60 W
  w2.alpha_cache = 0.01;
  const IgniterModel model(HandHardware());
  EXPECT_DOUBLE_EQ(IgniterModel::ActiveMs(w1, 2, 50), 1.4);

  // Alone: no delta_sch, no cache term; demand 50 + 147.857 < 200 W.
  const auto solo = model.Predict({{&w1, 2, 50}});
  ASSERT_EQ(solo.size(), 1u);
  EXPECT_DOUBLE_EQ(solo[0].clock_ratio, 1.0);
  EXPECT_NEAR(solo[0].gpu_ms, 0.5 + 1.4, 1e-12);
  EXPECT_NEAR(solo[0].load_ms, 0.2, 1e-12);
  EXPECT_NEAR(solo[0].feedback_ms, 0.1, 1e-12);
  EXPECT_NEAR(solo[0].inference_ms, 2.2, 1e-12);
  EXPECT_NEAR(solo[0].throughput_rps, 2000 / 2.0, 1e-9);

  // Together: delta_sch = 0.01 * 2 - 0.01 = 0.01 ms per kernel; demand
  // 50 + 147.857 + 60 = 257.857 W, f/F = (1000 - 2 * 57.857) / 1000.
  const auto both = model.Predict({{&w1, 2, 50}, {&w2, 1, 40}});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_NEAR(both[0].clock_ratio, 0.8842857142857142, 1e-12);
  // w1: (0.5 + 0.01 * 10 + 1.4 (1 + 0.02 * 10)) / ratio.
  EXPECT_NEAR(both[0].gpu_ms, 2.578352180936995, 1e-9);
  EXPECT_NEAR(both[0].inference_ms, 2.8783521809369947, 1e-9);
  EXPECT_NEAR(both[0].throughput_rps, 746.7277881657519, 1e-6);
  // w2: (0 + 1 (1 + 0.01 * 15.2857)) / ratio; no kernels, no transfer.
  EXPECT_NEAR(both[1].gpu_ms, 1.3037156704361874, 1e-9);
  EXPECT_NEAR(both[1].inference_ms, both[1].gpu_ms, 1e-12);
}

TEST(IgniterModelTest, DisabledTermsHaveNoEffect) {
  IgniterWorkload w;
  w.k = {0, 10, 0, 0, 1};
  w.beta_power = 500;  // far above the cap if power were on
  w.kernels = 100;
  IgniterHardware hw = HandHardware();
  hw.power_enabled = false;
  hw.scheduling_enabled = false;
  hw.bandwidth_bytes_per_ms = 0;
  w.input_bytes = 1e9;
  const auto p = IgniterModel(hw).Predict({{&w, 2, 50}, {&w, 2, 50}});
  EXPECT_DOUBLE_EQ(p[0].clock_ratio, 1.0);
  EXPECT_DOUBLE_EQ(p[0].inference_ms, 1.4);  // no cache term: alpha 0
}

TEST(IgniterModelTest, TheoremOneBatchAndLowerShare) {
  IgniterHardware hw;
  hw.bandwidth_bytes_per_ms = 1e7;
  const IgniterModel model(hw);
  IgniterWorkload alexnet;
  alexnet.input_bytes = 602112;
  // 15 * 0.4 * 1e7 / (2 (1e7 + 0.4 * 602112)) = 2.93 -> 3 (the digest's
  // W2).
  EXPECT_EQ(model.ApproxBatch(alexnet, 15, 400), 3);
  // Without transfers: T R / 2 exactly; 40 ms x 100 req/s -> 2, not 3.
  const IgniterModel no_pcie(IgniterHardware{});
  EXPECT_EQ(no_pcie.ApproxBatch(alexnet, 40, 100), 2);
  EXPECT_EQ(no_pcie.ApproxBatch(alexnet, 40, 101), 3);

  IgniterWorkload w;
  w.k = {1, 20, 3, 0, 5};
  w.solo_sched_ms = 1;
  // gamma = 4 + 40 + 3 = 47, delta = 20 - 5 - 1 = 14;
  // ceil(47 / (14 * 2.5)) * 2.5 = ceil(1.343) * 2.5 = 5 %.
  EXPECT_DOUBLE_EQ(no_pcie.LowerShare(w, 40, 2), 5.0);
  // k4 = 4 lowers it below one unit: the floor is r_unit.
  w.k[3] = 4;
  EXPECT_DOUBLE_EQ(no_pcie.LowerShare(w, 40, 2), 2.5);
  // ... and below the fitted range: the workload's min share.
  w.min_share_percent = 10;
  EXPECT_DOUBLE_EQ(no_pcie.LowerShare(w, 40, 2), 10.0);
  // Half the SLO used up by k5 and the scheduling delay: infeasible.
  EXPECT_TRUE(std::isinf(no_pcie.LowerShare(w, 12, 1)));
}

TEST(IgniterModelTest, FitActiveTimeRecoversTheCurve) {
  const std::array<double, 5> truth = {0.01, 8, 20, 0.5, 0.3};
  IgniterWorkload t;
  t.k = truth;
  std::vector<ActiveTimeSample> samples;
  for (int b : {1, 16, 32}) {
    for (double r : {10.0, 50.0, 100.0}) {
      samples.push_back({b, r, IgniterModel::ActiveMs(t, b, r)});
    }
  }
  auto k = FitActiveTime(samples);
  ASSERT_TRUE(k.ok()) << k.status();
  IgniterWorkload fit;
  fit.k = *k;
  // Off the fitted points too.
  for (int b : {2, 8, 24}) {
    for (double r : {20.0, 37.5, 80.0}) {
      EXPECT_NEAR(
          IgniterModel::ActiveMs(fit, b, r) / IgniterModel::ActiveMs(t, b, r),
          1.0, 2e-3)
          << "b " << b << " r " << r;
    }
  }
  EXPECT_FALSE(FitActiveTime({samples.begin(), samples.begin() + 4}).ok());
}

TEST(IgniterModelTest, FitLine) {
  const auto f = FitLine({1, 2, 3}, {3, 5, 7});
  EXPECT_NEAR(f[0], 2, 1e-12);
  EXPECT_NEAR(f[1], 1, 1e-12);
  const auto flat = FitLine({2, 2}, {1, 3});
  EXPECT_EQ(flat[0], 0);
  EXPECT_EQ(flat[1], 2);
}

TEST(IgniterCoefficientsRealDataTest, ReproducesThePublishedHardwareFit) {
  if (!std::filesystem::exists(kCoefficients)) {
    GTEST_SKIP() << kCoefficients << " not present";
  }
  auto c = LoadIgniterCoefficients(kCoefficients);
  ASSERT_TRUE(c.ok()) << c.status();
  // The paper's V100 values (Sec. 5.1): alpha_f = -1.025, alpha_sch =
  // 0.00475, beta_sch = -0.00902.
  EXPECT_NEAR(c->hardware.alpha_f_mhz_per_w, -1.025, 0.005);
  EXPECT_NEAR(c->hardware.alpha_sch_ms, 0.00475, 0.00005);
  EXPECT_NEAR(c->hardware.beta_sch_ms, -0.00902, 0.00005);
  EXPECT_TRUE(c->hardware.power_enabled);
  EXPECT_EQ(c->hardware.share_unit_percent, 2.5);
  ASSERT_EQ(c->workloads.size(), 4u);
  // The digest's alpha_cache from the authors' code.
  EXPECT_NEAR(c->workloads.at("alexnet").alpha_cache, 0.0023764, 2e-6);
  EXPECT_NEAR(c->workloads.at("vgg19").alpha_cache, 0.0020177, 2e-6);
  EXPECT_EQ(c->workloads.at("resnet50").kernels, 80);
  EXPECT_EQ(c->workloads.at("ssd").kernels, 93);
  EXPECT_TRUE(c->notes.empty());
}

TEST(IgniterCoefficientsRealDataTest, PredictsMeasuredLatencies) {
  const char kProfile[] = TESSERA_SHARED_DIR "/data/igniter-v100/profile.jsonl";
  if (!std::filesystem::exists(kCoefficients) ||
      !std::filesystem::exists(kProfile)) {
    GTEST_SKIP() << "iGniter V100 data not present";
  }
  auto c = LoadIgniterCoefficients(kCoefficients);
  ASSERT_TRUE(c.ok()) << c.status();
  auto data = LoadIgniterV100(kProfile, Share100Rule::kOmit);
  ASSERT_TRUE(data.ok()) << data.status();
  const IgniterEvaluation e = EvaluateIgniterModel(*c, *data);
  ASSERT_GT(e.solo.size(), 100u);
  ASSERT_EQ(e.pairs.size(), 1500u);
  const double solo50 = ErrorQuantile(e.solo, 0.5);
  const double solo90 = ErrorQuantile(e.solo, 0.9);
  const double pair50 = ErrorQuantile(e.pairs, 0.5);
  const double pair90 = ErrorQuantile(e.pairs, 0.9);
  std::cout << "[ info ] iGniter model error: solo p50 " << 100 * solo50
            << "% p90 " << 100 * solo90 << "%, co-located p50 " << 100 * pair50
            << "% p90 " << 100 * pair90 << "%\n";
  // The paper reports prediction errors within 10 %.
  EXPECT_LT(solo90, 0.10);
  EXPECT_LT(pair90, 0.10);
  EXPECT_LE(solo50, solo90);
}

}  // namespace
}  // namespace tessera
