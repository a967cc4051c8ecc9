// InssReproduction's held-out verdicts on hand-built results.
#include "sim/inss_reproduction.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

InssReproduction::PolicyRow Row(const std::string& policy, double max_rps,
                                double served_rps) {
  InssReproduction::PolicyRow row;
  row.policy = policy;
  row.max_rps = max_rps;
  row.mean_served_rps = served_rps;
  return row;
}

std::string VerdictOf(const std::vector<ReproductionClaim>& claims,
                      const std::string& against) {
  for (const ReproductionClaim& c : claims) {
    if (c.claim.find(against) != std::string::npos) return c.verdict;
  }
  return "";
}

// A policy that plans nothing (maximum 0) is beaten by one that plans
// something; two that plan nothing tie, which is not strictly above (in
// direction, as any tie).
TEST(InssReproductionTest, ABaselineThatPlansNothingIsBeaten) {
  InssReproduction::SloResult slo;
  slo.slo_factor = 5;
  slo.rows = {Row("inss", 14.7, 189.3), Row("inss-rr", 0, 81.4),
              Row("bda-random", 163.5, 190.5)};
  InssReproduction::Result result;
  result.slos = {slo};
  auto claims = InssReproduction::ActorVerdicts(result, "w");
  EXPECT_EQ(VerdictOf(claims, "above inss-rr"), "holds");
  EXPECT_EQ(VerdictOf(claims, "0.95 of bda-random"), "does not hold");

  result.slos[0].rows = {Row("inss", 0, 0), Row("inss-rr", 0, 0)};
  claims = InssReproduction::ActorVerdicts(result, "w");
  EXPECT_EQ(VerdictOf(claims, "above inss-rr"), "holds in direction");
}

}  // namespace
}  // namespace tessera
