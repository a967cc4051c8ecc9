#include "perfmodel/interference_model.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "datasets/igniter_v100_data.h"
#include "gtest/gtest.h"
#include "perfmodel/least_squares.h"

namespace tessera {
namespace {

TEST(LeastSquaresTest, RecoversExactCoefficients) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int i = 0; i < 20; ++i) {
    const double a = i, b = (i * 7) % 5;
    x.push_back({a, b, 1});
    y.push_back(2 * a - 3 * b + 0.5);
  }
  auto w = SolveLeastSquares(x, y);
  ASSERT_TRUE(w.ok());
  EXPECT_NEAR((*w)[0], 2, 1e-9);
  EXPECT_NEAR((*w)[1], -3, 1e-9);
  EXPECT_NEAR((*w)[2], 0.5, 1e-9);
}

TEST(LeastSquaresTest, SingularSystemIsAnError) {
  EXPECT_FALSE(SolveLeastSquares({{1, 2}, {2, 4}}, {1, 2}).ok());
}

// Two models whose utilisation varies with batch; co-located latency made
// from known linear coefficients: the fit must find them again.
TEST(LinearInterferenceTest, FitRecoversGeneratingModel) {
  std::vector<ModelProfile> profiles(2);
  for (int k = 0; k < 2; ++k) {
    profiles[k].set_model(k == 0 ? "a" : "b");
    for (double share : {20.0, 50.0, 80.0}) {
      for (int b = 1; b <= 8; ++b) {
        LatencyPoint* p = profiles[k].add_latency();
        p->set_batch_size(b);
        p->set_share_percent(share);
        p->set_latency_ms((1 + b) * 100 / share);
        p->set_l2_util_percent(10 + 5 * b + 20 * k + share / 10);
        p->set_dram_util_percent(30 + 3 * b * (k + 1) - share / 20);
      }
    }
  }
  auto a = LatencyModel::FromProfile(profiles[0]);
  auto b = LatencyModel::FromProfile(profiles[1]);
  ASSERT_TRUE(a.ok() && b.ok());
  const LinearInterference truth({0.2, 0.5, 0.3, 0.4, 1.0});
  std::vector<CoLocationSample> rows;
  for (double share : {20.0, 50.0, 80.0}) {
    for (int b1 = 1; b1 <= 8; b1 += 2) {
      for (int b2 = 1; b2 <= 8; b2 += 3) {
        Placement pa{&*a, b1, share}, pb{&*b, b2, 100 - share};
        if (100 - share != 20 && 100 - share != 50 && 100 - share != 80)
          continue;
        rows.push_back({pa, pb, truth.LatencyMs(pa, {pb})});
        rows.push_back({pb, pa, truth.LatencyMs(pb, {pa})});
      }
    }
  }
  auto fit = LinearInterference::Fit(rows);
  ASSERT_TRUE(fit.ok()) << fit.status();
  const std::vector<double> want = {0.2, 0.5, 0.3, 0.4, 1.0};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(fit->coefficients()[i], want[i], 1e-6) << i;
  }
  // The constant baseline is the mean factor.
  double mean = 0;
  for (const auto& r : rows) {
    mean += r.latency_ms /
            r.self.model->LatencyMs(r.self.batch, r.self.share_percent);
  }
  EXPECT_NEAR(ConstantInterference::Fit(rows).factor(), mean / rows.size(),
              1e-12);
}

TEST(InterferenceModelTest, WorstNeighbourDominatesAndFactorIsAtLeastOne) {
  ModelProfile p;
  p.set_model("m");
  LatencyPoint* pt = p.add_latency();
  pt->set_batch_size(1);
  pt->set_share_percent(50);
  pt->set_latency_ms(10);
  auto m = LatencyModel::FromProfile(p);
  ASSERT_TRUE(m.ok());
  const LinearInterference below_one({0, 0, 0, 0, 0.5});
  Placement x{&*m, 1, 50};
  EXPECT_DOUBLE_EQ(below_one.LatencyMs(x, {x}), 10);  // clamped to 1
  EXPECT_DOUBLE_EQ(ConstantInterference(1.3).LatencyMs(x, {x, x}), 13);
  EXPECT_DOUBLE_EQ(NoInterference().LatencyMs(x, {}), 10);
}

TEST(IgniterV100DataTest, ReadsGridsRowsAndFillsFullShare) {
  const std::string path = ::testing::TempDir() + "/v100_mini.jsonl";
  {
    std::ofstream out(path);
    out << R"({"m1": {"latency": {"1": {"80": 4.0, "100": 3.0}, "2": {"80": 6.0}}}})"
        << "\n"
        << R"({"m1": {"l2cache": {"1": {"80": 10.0, "100": 12.0}, "2": {"80": 20.0}}}})"
        << "\n"
        << R"({"m2": {"latency": {"1": {"20": 9.0, "80": 3.0}, "2": {"20": 12.0, "80": 4.0}}}})"
        << "\n"
        << R"({"interference": {"latency": [["m1", "m2", 2, 2, 80, 7.0, 13.0]]}})"
        << "\n"
        << R"({"interference": {"std": [["m1", "m2", 2, 2, 80, 0.1, 0.2]]}})"
        << "\n";
  }
  auto data = LoadIgniterV100(path, Share100Rule::kBatch1Ratio);
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ(data->colocation.size(), 1u);
  EXPECT_EQ(data->colocation[0].model2, "m2");
  EXPECT_DOUBLE_EQ(data->colocation[0].latency2_ms, 13.0);
  EXPECT_DOUBLE_EQ(data->colocation[0].std1_ms, 0.1);
  auto models = BuildLatencyModels(data->profiles);
  ASSERT_TRUE(models.ok());
  // L(2,100) = L(2,80) * L(1,100) / L(1,80) = 6 * 3 / 4.
  EXPECT_DOUBLE_EQ(models->at("m1").LatencyMs(2, 100), 4.5);
  EXPECT_DOUBLE_EQ(models->at("m1").L2Util(2, 100), 20);  // 80 %'s counter
  auto same = LoadIgniterV100(path, Share100Rule::kSameAs80);
  EXPECT_DOUBLE_EQ(
      BuildLatencyModels(same->profiles)->at("m1").LatencyMs(2, 100), 6);
  auto samples = ToSamples(data->colocation, *models);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_DOUBLE_EQ(samples[1].self.share_percent, 20);
  std::remove(path.c_str());
}

TEST(IgniterV100DataTest, ParsesShare100RuleNames) {
  EXPECT_EQ(*ParseShare100Rule("batch1-ratio"), Share100Rule::kBatch1Ratio);
  EXPECT_EQ(*ParseShare100Rule("same-as-80"), Share100Rule::kSameAs80);
  EXPECT_EQ(*ParseShare100Rule("omit"), Share100Rule::kOmit);
  EXPECT_EQ(ParseShare100Rule("same_as_80").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IgniterV100DataTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadIgniterV100("/nonexistent.jsonl", Share100Rule::kOmit)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera

#include "datasets/glet_data.h"

namespace tessera {
namespace {

TEST(GletDataTest, ReadsPublishedCoefficients) {
  const std::string path = ::testing::TempDir() + "/int_constants.csv";
  {
    std::ofstream out(path);
    out << "l2_util_m1,l2_util_m2,dram_util_m1,dram_util_m2,constant\n"
        << "1.5,-2.25,0.5,4,-1\n";  // synthetic values
  }
  auto m = LoadGletInterferenceConstants(path);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->coefficients(), (std::vector<double>{1.5, -2.25, 0.5, 4, -1}));
  {
    std::ofstream out(path);
    out << "header\n0.1,0.2,x\n";
  }
  EXPECT_EQ(LoadGletInterferenceConstants(path).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::remove(path.c_str());
  EXPECT_EQ(LoadGletInterferenceConstants(path).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(GletDataTest, ReadsUtilisationRows) {
  const std::string path = ::testing::TempDir() + "/util.csv";
  {
    std::ofstream out(path);
    out << "bench,batch,avg_duration(ms),SM_util(%),l2_util(%),mem_util(%),"
           "achieved occupancy,theoretical occupancy\n"
        << "lenet,8,0.5,10,20,30,40,50,\n"  // the artifact's trailing comma
        << "lenet,1,0.1,1,2,3,4,5\n";
  }
  auto u = LoadGletUtil(path);
  ASSERT_TRUE(u.ok()) << u.status();
  ASSERT_EQ(u->at("lenet").size(), 2u);
  const GletUtil& r = u->at("lenet").at(8);
  EXPECT_EQ(r.avg_kernel_ms, 0.5);
  EXPECT_EQ(r.l2_percent, 20);
  EXPECT_EQ(r.dram_percent, 30);
  EXPECT_EQ(r.theoretical_occupancy, 50);
  {
    std::ofstream out(path);
    out << "header\nlenet,x,1,2,3,4,5,6\n";
  }
  EXPECT_EQ(LoadGletUtil(path).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::remove(path.c_str());
}

TEST(GletDataTest, LinearFactorFromUtilisationsByHand) {
  const LinearInterference m({1.5, -2.25, 0.5, 4, -1});
  // 1.5 * 0.2 - 2.25 * 0.1 + 0.5 * 0.4 + 4 * 0.5 - 1 = 1.275
  EXPECT_NEAR(m.FactorFromUtil(0.2, 0.1, 0.4, 0.5), 1.275, 1e-12);
  // Below 1: clamped (a neighbour never speeds a model up).
  EXPECT_EQ(m.FactorFromUtil(0.2, 0.4, 0.1, 0.3), 1.0);
}

TEST(GletDataTest, PublishedArtifactUtilisationTables) {
  for (const char* gpu : {"2080ti", "3080"}) {
    const std::string dir =
        std::string(TESSERA_SHARED_DIR) + "/data/glet/" + gpu;
    if (!std::filesystem::exists(dir + "/UTIL.CSV")) {
      GTEST_SKIP() << dir << "/UTIL.CSV not present";
    }
    auto u = LoadGletUtil(dir + "/UTIL.CSV");
    ASSERT_TRUE(u.ok()) << u.status();
    EXPECT_EQ(u->size(), 9u) << gpu;
    for (const auto& [model, rows] : *u) {
      EXPECT_EQ(rows.size(), 10u) << gpu << " " << model;
      for (const auto& [b, r] : rows) {
        EXPECT_GT(r.avg_kernel_ms, 0) << model;
        EXPECT_GE(r.l2_percent, 0);
        EXPECT_LE(r.l2_percent, 100);
        EXPECT_LE(r.dram_percent, 100);
      }
    }
    auto c = LoadGletInterferenceConstants(dir + "/INT_MODEL_CONSTANT.CSV");
    ASSERT_TRUE(c.ok()) << c.status();
    // gpulet's published model on its own counters, every pair at batch 8:
    // plausible factors (a neighbour at most doubles a latency).
    double lo = 10, hi = 0;
    for (const auto& [a, ra] : *u) {
      for (const auto& [b, rb] : *u) {
        const GletUtil& x = ra.at(8);
        const GletUtil& y = rb.at(8);
        const double f =
            c->FactorFromUtil(x.l2_percent / 100, y.l2_percent / 100,
                              x.dram_percent / 100, y.dram_percent / 100);
        lo = std::min(lo, f);
        hi = std::max(hi, f);
      }
    }
    std::cout << "[ info ] " << gpu << ": published model on UTIL.CSV at "
              << "batch 8: factors " << lo << " .. " << hi << "\n";
    EXPECT_GE(lo, 1.0);
    EXPECT_LT(hi, 2.0);
    if (std::string(gpu) == "2080ti") {
      // Two memory-heavy models slow each other more than two light ones.
      auto pair = [&](const std::string& m) {
        const GletUtil& x = u->at(m).at(8);
        return c->FactorFromUtil(x.l2_percent / 100, x.l2_percent / 100,
                                 x.dram_percent / 100, x.dram_percent / 100);
      };
      EXPECT_GT(pair("vgg16"), pair("lenet"));
    }
  }
}

}  // namespace
}  // namespace tessera
